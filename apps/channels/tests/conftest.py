from __future__ import annotations

import pytest

from apps.webhooks import delivery as engine
from apps.webhooks.tests.receiver import Receiver


@pytest.fixture(autouse=True)
def triggers(monkeypatch: pytest.MonkeyPatch) -> list[float | None]:
    """The delivery engine's triggers (countdowns), recorded instead of run: eager Celery would run a
    retry's trigger inline and ignore its countdown. Tests run the engine themselves."""
    asked: list[float | None] = []
    monkeypatch.setattr(engine.sweep, "trigger", lambda countdown=None: asked.append(countdown))
    return asked


@pytest.fixture
def receiver(monkeypatch: pytest.MonkeyPatch, settings):
    settings.OUTBOUND_ALLOW_LOOPBACK = True
    with Receiver() as rx:
        monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(rx.ca_path))
        yield rx
