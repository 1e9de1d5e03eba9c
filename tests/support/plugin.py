"""pytest plugin of the project: fixtures every app's tests use.

- `widget`, `other_widget`: two tenants with the API enabled.
- `make_token(widget=None, scopes=..., **kw)`: issue a real token, returns the plaintext.
- `api(scopes=...)`: a DRF APIClient authenticated for `widget`.
- `assert_problem(response, status, code=None)`: the problem+json contract.
- `captured_events`: the outbox rows emitted during the test.
- `provide_port(port, impl, key=None)`: `impl` answers an apps.core.ports port until the test ends
  (None: nothing does); the app's own provider answers again afterwards.
- markers `postgres` / `redis`: skipped, with the reason, on the embedded default.
- marker `embedded`: a test that builds the embedded default itself (its own SQLite file, its own
  processes) whatever the suite's database; run by the suite on the embedded default, skipped where
  DATABASE_URL is set, whose run of it would repeat that suite's.
"""

from __future__ import annotations

import json
from contextlib import ExitStack

import pytest
from django.conf import settings

from apps.core.auth.scopes import OPERATIONAL_SCOPES
from apps.core.errors import PROBLEM_CONTENT_TYPE

ALL = sorted(OPERATIONAL_SCOPES)


def pytest_runtest_setup(item):
    if item.get_closest_marker("postgres") and not settings.USING_POSTGRES:
        pytest.skip("needs PostgreSQL: set DATABASE_URL (CI runs it)")
    if item.get_closest_marker("redis") and not settings.REDIS_URL:
        pytest.skip("needs Redis: set REDIS_URL (CI runs it)")
    if item.get_closest_marker("embedded") and settings.USING_POSTGRES:
        pytest.skip("the embedded default's own test: runs in the suite without DATABASE_URL (CI runs it)")


@pytest.fixture(autouse=True)
def _isolated_rate_limits(settings):
    """Each test starts with fresh per-token budgets and empty caches: Redis keys and cache files
    survive the test database, whose ids are reused from test to test."""
    from django.core.cache import cache

    cache.clear()
    if settings.REDIS_URL:
        import redis

        client = redis.Redis.from_url(settings.REDIS_URL)
        keys = list(client.scan_iter("rl:*", count=1000))
        if keys:
            client.delete(*keys)
    yield


@pytest.fixture(autouse=True, scope="session")
def _close_background_pools():
    """The webhook engine's pooled connections outlive a test: close them when the session ends."""
    yield
    from apps.webhooks.services import close_session

    close_session()


@pytest.fixture
def widget(db):
    from tests.support.factories import WidgetFactory

    return WidgetFactory()


@pytest.fixture
def other_widget(db):
    from tests.support.factories import WidgetFactory

    return WidgetFactory()


@pytest.fixture
def make_token(db, widget):
    from apps.core import services

    def make(w=None, scopes=ALL, **kwargs) -> str:
        return services.issue_token(widget=w or widget, scopes=list(scopes), **kwargs).plaintext

    return make


@pytest.fixture
def api(make_token, widget):
    from rest_framework.test import APIClient

    def make(scopes=ALL, w=None, **kwargs) -> APIClient:
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {make_token(w or widget, scopes, **kwargs)}")
        return client

    return make


def assert_problem(response, status: int, code: str | None = None) -> dict:
    assert response.status_code == status, (response.status_code, getattr(response, "content", b"")[:500])
    assert response["Content-Type"].startswith(PROBLEM_CONTENT_TYPE), response["Content-Type"]
    body = json.loads(response.content)
    for member in ("type", "title", "status", "detail", "instance", "code"):
        assert member in body, (member, body)
    assert body["status"] == status
    if code is not None:
        assert body["code"] == code, body
    return body


@pytest.fixture(name="assert_problem")
def assert_problem_fixture():
    return assert_problem


@pytest.fixture
def captured_events(db):
    """Call the returned function to get [(type, data), ...] emitted since the fixture started."""
    from apps.core.models import OutboxEvent

    before = set(OutboxEvent.objects.values_list("pk", flat=True))

    def events():
        return [(e.type, e.data) for e in OutboxEvent.objects.exclude(pk__in=before).order_by("created_at")]

    return events


@pytest.fixture
def provide_port():
    """Call the returned function to replace a port's provider for the rest of the test."""
    from apps.core import ports

    with ExitStack() as stack:

        def provide(port, impl, key=None) -> None:
            stack.enter_context(ports.override(port, impl, key=key))

        yield provide
