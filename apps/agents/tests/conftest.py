"""Fixtures of the agents tests."""

import itertools

import pytest

_keys = itertools.count()


def idem() -> dict:
    return {"HTTP_X_SERVICE_IDEMPOTENCY_KEY": f"agents-key-{next(_keys)}"}


@pytest.fixture
def purges(monkeypatch):
    """Widget ids whose served cache was purged, in call order (the real purge still runs)."""
    from apps.widget import handlers
    from apps.widget.services import purge_widget_cache

    calls: list[int] = []

    def spy(*, widget_id):
        calls.append(widget_id)
        purge_widget_cache(widget_id=widget_id)

    monkeypatch.setattr(handlers, "purge_widget_cache", spy)
    return calls


@pytest.fixture
def presence(monkeypatch):
    """Set the live presence: `presence({id, ...})`."""
    from apps.agents import selectors

    def set_online(ids):
        monkeypatch.setattr(selectors, "PRESENCE_SOURCE", lambda widget: set(ids))

    return set_online
