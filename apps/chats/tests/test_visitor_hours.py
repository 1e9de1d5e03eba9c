"""The visitor config under business hours: `open`, `opens_at`, `outside_hours` and `online`."""

from datetime import UTC, datetime

import pytest

from apps.agents import selectors as agent_selectors
from apps.chats.tests.factories import AgentFactory
from apps.widget import selectors as widget_selectors
from apps.widget import services as widget_services

pytestmark = pytest.mark.django_db

DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
SATURDAY_NOON = datetime(2026, 11, 7, 11, 0, tzinfo=UTC)  # 12:00 in Berlin
MONDAY_TEN = datetime(2026, 11, 9, 9, 0, tzinfo=UTC)  # 10:00 in Berlin


@pytest.fixture
def clock(monkeypatch):
    """clock.now: the moment the hours are read at."""

    class Clock:
        now = SATURDAY_NOON

    real = widget_selectors.business_hours_state
    monkeypatch.setattr(
        widget_selectors,
        "business_hours_state",
        lambda widget, now=None, **kw: real(widget, now=now or Clock.now, **kw),
    )
    return Clock


@pytest.fixture
def someone_online(widget, monkeypatch):
    olga = AgentFactory(widget=widget)
    monkeypatch.setattr(agent_selectors, "PRESENCE_SOURCE", lambda widget: {olga.pk})
    return olga


def set_hours(widget, mode="offline_form", enabled=True):
    weekly = {day: [["09:00", "18:00"]] if day in DAYS[:5] else [] for day in DAYS}
    body = {"enabled": enabled, "timezone": "Europe/Berlin", "weekly": weekly, "holidays": [], "outside_hours": mode}
    widget_services.set_business_hours(widget=widget, body=body)


def config(client, widget) -> dict:
    response = client.get(f"/api/visitor/v1/{widget.button_guid}/config")
    assert response.status_code == 200
    return response.json()


def test_without_business_hours_the_widget_is_open(client, widget, someone_online):
    body = config(client, widget)
    assert (body["open"], body["opens_at"], body["outside_hours"], body["online"]) == (True, None, None, True)


def test_while_closed_online_is_false_whoever_is_connected(client, widget, someone_online, clock):
    set_hours(widget)
    body = config(client, widget)
    assert body["open"] is False and body["online"] is False
    assert body["opens_at"] == "2026-11-09T09:00:00+01:00"
    assert body["outside_hours"] == "offline_form"


def test_while_open_the_config_reads_open_and_no_opening(client, widget, someone_online, clock):
    set_hours(widget, "hidden")
    clock.now = MONDAY_TEN
    body = config(client, widget)
    assert (body["open"], body["opens_at"], body["online"], body["outside_hours"]) == (True, None, True, "hidden")


def test_open_is_computed_per_request_not_cached(client, widget, someone_online, clock):
    set_hours(widget, "ai_only")
    assert config(client, widget)["open"] is False
    clock.now = MONDAY_TEN
    assert config(client, widget)["open"] is True


def test_disabled_hours_keep_the_widget_open(client, widget, someone_online, clock):
    set_hours(widget, enabled=False)
    body = config(client, widget)
    assert body["open"] is True and body["online"] is True and body["outside_hours"] is None


def test_a_department_is_open_only_when_the_widget_and_its_week_both_say_so(widget):
    from apps.agents import services as agent_services

    weekend = agent_services.create_department(widget=widget, name="Weekend", schedule={"Saturday": "full"})
    always = agent_services.create_department(widget=widget, name="Always")
    # no business hours: the department's own week decides
    assert widget_selectors.department_is_open(widget, weekend, now=SATURDAY_NOON)
    set_hours(widget)
    # the widget is closed on Saturday, so the department is too
    assert not widget_selectors.department_is_open(widget, weekend, now=SATURDAY_NOON)
    assert widget_selectors.department_is_open(widget, always, now=MONDAY_TEN)
    # the widget is open on Monday, the department's own week is not
    assert not widget_selectors.department_is_open(widget, weekend, now=MONDAY_TEN)


def test_the_hours_are_read_from_the_row_when_the_cache_is_down(widget, monkeypatch):
    from django.core.cache import cache

    set_hours(widget)

    def down(*args, **kwargs):
        raise ConnectionError("cache down")

    monkeypatch.setattr(cache, "get", down)
    assert not widget_selectors.business_hours_state(widget, now=SATURDAY_NOON).open
    assert widget_selectors.business_hours_state(widget, now=MONDAY_TEN).open
