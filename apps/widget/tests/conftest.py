"""Fixtures of the widget tests: the widget routes, an isolated cache, idempotency keys, a purge spy."""

import uuid
from datetime import UTC, datetime

import pytest

SETTINGS = "/api/v1/widget/settings"
SCHEMA = "/api/v1/widget/settings/schema"
LANGUAGE = "/api/v1/widget/language"
SKINS = "/api/v1/widget/skins"
ICONS = "/api/v1/widget/icons"
EMBED = "/api/v1/widget/embed"
PURGE = "/api/v1/widget/cache/purge"


def idem() -> dict:
    return {"HTTP_X_SERVICE_IDEMPOTENCY_KEY": f"widget-{uuid.uuid4().hex}"}


def patch(client, body, **headers):
    return client.patch(SETTINGS, body, format="json", **{**idem(), **headers})


@pytest.fixture(autouse=True)
def _widget_routes_and_cache(settings):
    """The widget routes (config.urls may not include them yet) and a cache of this test only: the
    served cache is keyed by widget id, and ids repeat across test databases."""
    settings.ROOT_URLCONF = "apps.widget.tests.urls"
    settings.CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": uuid.uuid4().hex}
    }


@pytest.fixture(autouse=True)
def _media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    return tmp_path


@pytest.fixture
def legacy_widget(db):
    from tests.support.factories import WidgetFactory

    return WidgetFactory(created_at=datetime(2024, 6, 1, tzinfo=UTC))


@pytest.fixture
def purges(monkeypatch):
    """Widget ids whose served cache was purged, in call order (the real purge still runs)."""
    from apps.widget import handlers

    real = handlers.purge_widget_cache
    calls: list[int] = []

    def spy(*, widget_id):
        calls.append(widget_id)
        real(widget_id=widget_id)

    monkeypatch.setattr(handlers, "purge_widget_cache", spy)
    return calls
