from __future__ import annotations

import pytest

from apps.webhooks import delivery as engine
from apps.webhooks.tests.receiver import Receiver


@pytest.fixture(autouse=True)
def _loopback_allowed(settings):
    """Operator URLs in these tests point at loopback receivers."""
    settings.OUTBOUND_ALLOW_LOOPBACK = True


@pytest.fixture
def receiver(monkeypatch: pytest.MonkeyPatch, settings):
    """A real HTTPS receiver on loopback (trustme CA), reachable through the guarded client."""
    settings.OUTBOUND_ALLOW_LOOPBACK = True
    with Receiver() as rx:
        monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(rx.ca_path))
        yield rx


@pytest.fixture
def triggers(monkeypatch: pytest.MonkeyPatch) -> list[float | None]:
    """The engine's Celery triggers, recorded instead of sent (tests drive the engine inline)."""
    asked: list[float | None] = []
    monkeypatch.setattr(engine.sweep, "trigger", lambda countdown=None: asked.append(countdown))
    return asked
