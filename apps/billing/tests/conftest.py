"""Fixtures of the billing tests. The billing routes are served by a test URLconf that adds them to
the project's, so the tests run before and after config.urls includes them."""

import itertools

import pytest

_keys = itertools.count()


def idem() -> dict:
    return {"HTTP_X_SERVICE_IDEMPOTENCY_KEY": f"billing-key-{next(_keys)}"}


@pytest.fixture
def sibling_widget(widget):
    """Another widget of the same account as `widget`."""
    from tests.support.factories import WidgetFactory

    return WidgetFactory(account=widget.account)


@pytest.fixture
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


@pytest.fixture
def purges(monkeypatch):
    """Widget ids whose served cache was purged by billing services, in call order."""
    from apps.widget import handlers
    from apps.widget.services import purge_widget_cache

    calls: list[int] = []

    def spy(*, widget_id):
        calls.append(widget_id)
        purge_widget_cache(widget_id=widget_id)

    monkeypatch.setattr(handlers, "purge_widget_cache", spy)
    return calls
