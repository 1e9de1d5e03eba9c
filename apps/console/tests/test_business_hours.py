"""The console's header says when the widget is closed to visitors (business hours)."""

import uuid
from datetime import UTC, datetime

import pytest

from apps.widget import selectors as widget_selectors
from apps.widget import services as widget_services

pytestmark = pytest.mark.django_db

DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")


@pytest.fixture(autouse=True)
def saturday_noon(monkeypatch, settings):
    settings.CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": uuid.uuid4().hex}
    }
    real = widget_selectors.business_hours_state
    moment = datetime(2026, 11, 7, 11, 0, tzinfo=UTC)  # Saturday 12:00 in Berlin
    monkeypatch.setattr(
        widget_selectors, "business_hours_state", lambda widget, now=None, **kw: real(widget, now=moment, **kw)
    )


def set_hours(widget, weekend_open: bool):
    weekly = {day: [["09:00", "18:00"]] if (day in DAYS[5:]) == weekend_open else [] for day in DAYS}
    body = {"enabled": True, "timezone": "Europe/Berlin", "weekly": weekly, "holidays": [], "outside_hours": "hidden"}
    widget_services.set_business_hours(widget=widget, body=body)


def test_the_header_shows_the_widget_closed_and_when_it_opens(console, widget, chat):
    set_hours(widget, weekend_open=False)
    for url in ("/console/", f"/console/chats/{chat.pk}/"):
        html = console.get(url).content.decode()
        assert 'id="hours"' in html
        assert "Widget closed (outside business hours) · opens 09:00 09.11" in html


def test_the_header_says_nothing_while_the_widget_is_open(console, widget):
    set_hours(widget, weekend_open=True)
    assert 'id="hours"' not in console.get("/console/").content.decode()
