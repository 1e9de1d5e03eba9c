"""Fixtures of the AI configuration tests."""

import ipaddress
import itertools

import pytest

_keys = itertools.count()

AI_SETUP = [
    "widget:read",
    "widget:write",
    "ai:read",
    "ai:write",
    "ai:apply",
    "kb:read",
    "kb:write",
    "files:write",
    "stats:read",
]
AI_ALL = [*AI_SETUP, "ai:credentials:write", "agents:read"]


def idem() -> dict:
    return {"HTTP_X_SERVICE_IDEMPOTENCY_KEY": f"ai-key-{next(_keys)}"}


@pytest.fixture
def client(api):
    return api(AI_ALL)


@pytest.fixture(autouse=True)
def public_dns(monkeypatch):
    """Hosts resolve to a public address; `private.test` to a private one, `loop.test` to loopback."""
    from apps.platform import outbound

    def resolve(host, port):
        if host == "private.test":
            return [ipaddress.ip_address("10.0.0.5")]
        if host in ("loop.test", "localhost"):
            return [ipaddress.ip_address("127.0.0.1")]
        return [ipaddress.ip_address("93.184.216.34")]

    monkeypatch.setattr(outbound.policy, "resolve_host", resolve)


from tests.llm_fake import e5, e5_server, llm_fake  # noqa: F401,E402 (the fixtures)
