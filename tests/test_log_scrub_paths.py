"""Routes whose path carries a credential (the compat bot token, the Chat API channel secret, an
agent invitation, a signed file download) never put it in a log line: the request log, Django's
own error lines and uvicorn's lines all go through `apps.core.logging.scrub`."""

from __future__ import annotations

import io
import logging
import secrets

import pytest
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from apps.core.logging import JSONFormatter, scrub
from config.routing import websocket_urlpatterns

CREDENTIAL_GROUPS = {"token", "secret", "key"}


def _credential_routes(patterns, namespace: str = ""):
    for entry in patterns:
        if isinstance(entry, URLResolver):
            inner = f"{namespace}{entry.namespace}:" if entry.namespace else namespace
            yield from _credential_routes(entry.url_patterns, inner)
        elif isinstance(entry, URLPattern) and CREDENTIAL_GROUPS & set(entry.pattern.regex.groupindex):
            assert entry.name, f"a credential-bearing route without a name: {entry.pattern}"
            yield namespace + entry.name, sorted(entry.pattern.regex.groupindex)


def test_every_route_with_a_credential_in_its_path_is_scrubbed():
    routes = list(_credential_routes(get_resolver().url_patterns))
    assert {name for name, _ in routes} >= {"compat-bot", "compat-chat", "compat-chat-status", "agent-invite"}
    for name, groups in routes:
        secret = secrets.token_hex(24)
        path = reverse(name, kwargs={g: secret if g in CREDENTIAL_GROUPS else "x" for g in groups})
        line = scrub(f'{{"message": "request", "path": "{path}", "note": "Not Found: {path}"}}')
        assert secret not in line, (name, line)
    for entry in websocket_urlpatterns:  # sockets carry their credential in a header or frame
        assert not CREDENTIAL_GROUPS & set(entry.pattern.regex.groupindex)


@pytest.fixture
def console_output():
    buffer = io.StringIO()
    handlers = {
        handler
        for logger in [logging.getLogger(), *logging.Logger.manager.loggerDict.values()]
        if isinstance(logger, logging.Logger)
        for handler in logger.handlers
        if isinstance(handler, logging.StreamHandler) and isinstance(handler.formatter, JSONFormatter)
    }
    previous = {handler: handler.setStream(buffer) for handler in handlers}
    yield buffer
    for handler, stream in previous.items():
        handler.setStream(stream)


@pytest.mark.django_db
@pytest.mark.parametrize(
    "template",
    [
        "/api/compat/legacy/bot/{}",
        "/api/compat/legacy/bot/{}/",
        "/api/compat/legacy/chat/{}",
        "/api/compat/legacy/chat/{}/status",
        "/invite/{}",
        "/api/files/{}",
    ],
)
def test_requests_to_credential_paths_log_no_secret(client, console_output, template):
    secret = secrets.token_hex(24)
    client.get(template.format(secret))
    client.post(template.format(secret), data=b"{", content_type="application/json")
    text = console_output.getvalue()
    assert '"message": "request"' in text, "the request was not logged"
    assert secret not in text
    assert template.split("{}")[0] + "[redacted]" in text
