"""The owner's business-hours page: the week editor, the time zone, holidays and the closed-hours
mode, written whole through the API route's service, with the route's refusals beside the inputs
they are about; audited with the owner as the actor."""

import itertools
import re

import pytest

from apps.audit.models import AuditEntry
from apps.widget import selectors as widget_selectors
from apps.widget import services as widget_services
from apps.widget.models import BusinessHours

pytestmark = pytest.mark.django_db

HOURS = "/console/settings/widget/hours/"
API = "/api/v1/widget/business-hours"
DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
_keys = itertools.count()


def idem() -> dict:
    return {"HTTP_X_SERVICE_IDEMPOTENCY_KEY": f"hours-page-{next(_keys)}"}


def form(**extra) -> dict:
    data = {"enabled": "1", "timezone": "Europe/Berlin", "outside_hours": "offline_form"}
    data.update(extra)
    return data


def errors_of(response) -> list[str]:
    return [m.strip() for m in re.findall(r'<p class="error">(.*?)</p>', response.content.decode())]


def unescape(message: str) -> str:
    return message.replace("&quot;", '"').replace("&#x27;", "'").replace("&lt;", "<").replace("&gt;", ">")


def test_the_page_shows_the_default_always_open(owner_console, widget):
    response = owner_console.get(HOURS)
    assert response.status_code == 200
    html = response.content.decode()
    assert "Business hours" in html and "Off: the widget is always open" in html
    assert 'name="mon-start-0"' in html and 'name="sun-end-0"' in html and 'name="holiday"' in html
    assert "<option selected>Europe/Moscow</option>" in html or "Europe/" in html


def test_saving_a_week_with_two_intervals_and_a_holiday(owner_console, owner, widget):
    data = form(
        **{"mon-start-0": "09:00", "mon-end-0": "13:00", "mon-start-1": "14:00", "mon-end-1": "18:00"},
        **{
            "sat-closed": "1",
            "sat-start-0": "10:00",
            "sat-end-0": "12:00",
            "sun-start-0": "22:00",
            "sun-end-0": "24:00",
        },
        holiday=["2026-12-31", "", "2027-01-01"],
    )
    response = owner_console.post(HOURS, data)
    assert response.status_code == 303 and response.url == HOURS
    stored = widget_selectors.get_business_hours(widget)
    assert stored["enabled"] is True and stored["timezone"] == "Europe/Berlin"
    assert stored["weekly"]["mon"] == [["09:00", "13:00"], ["14:00", "18:00"]]
    assert stored["weekly"]["sat"] == [] and stored["weekly"]["tue"] == []  # closed, and nothing filled in
    assert stored["weekly"]["sun"] == [["22:00", "24:00"]]
    assert stored["holidays"] == ["2026-12-31", "2027-01-01"]
    entry = AuditEntry.objects.get(action="business_hours.changed")
    assert (entry.actor_type, str(entry.actor_id)) == ("agent", str(owner.pk))
    html = owner_console.get(HOURS).content.decode()
    assert 'value="14:00"' in html and 'value="2027-01-01"' in html and 'name="mon-start-2"' in html


@pytest.mark.parametrize(
    "data,body",
    [
        (
            form(**{"mon-start-0": "18:00", "mon-end-0": "09:00"}),
            {"weekly.mon": [["18:00", "09:00"]]},
        ),
        (
            form(**{"tue-start-0": "09:00", "tue-end-0": "13:00", "tue-start-1": "12:00", "tue-end-1": "15:00"}),
            {"weekly.tue": [["09:00", "13:00"], ["12:00", "15:00"]]},
        ),
        (form(**{"wed-start-0": "9am", "wed-end-0": ""}), {"weekly.wed": [["9am", ""]]}),
        (form(timezone="Mars/Olympus"), {"timezone": "Mars/Olympus"}),
        (form(outside_hours="vanish"), {"outside_hours": "vanish"}),
        (form(holiday=["2026-02-30"]), {"holidays": ["2026-02-30"]}),
        (form(holiday=["2026-05-01", "2026-05-01"]), {"holidays": ["2026-05-01", "2026-05-01"]}),
    ],
)
def test_a_refusal_shows_the_apis_messages_and_stores_nothing(owner_console, widget, api, data, body):
    api_body = {
        "enabled": True,
        "timezone": "Europe/Berlin",
        "weekly": {day: [] for day in DAYS},
        "holidays": [],
        "outside_hours": "offline_form",
    }
    for key, value in body.items():
        if key.startswith("weekly."):
            api_body["weekly"][key[7:]] = value
        else:
            api_body[key] = value
    response = owner_console.post(HOURS, data)
    answer = api().put(API, api_body, format="json", **idem())
    assert response.status_code == answer.status_code == 422
    expected = [m for messages in answer.json()["errors"].values() for m in messages]
    assert sorted(unescape(m) for m in errors_of(response)) == sorted(expected)
    assert answer.json()["detail"] in response.content.decode()
    assert not BusinessHours.objects.filter(widget=widget).exists()
    assert not AuditEntry.objects.filter(action="business_hours.changed").exists()


def test_a_refused_form_keeps_what_was_typed(owner_console):
    response = owner_console.post(HOURS, form(**{"fri-start-2": "18:00", "fri-end-2": "09:00"}))
    html = response.content.decode()
    assert 'name="fri-start-2" value="18:00"' in html
    assert "The start must be before the end." in html


def test_removing_the_hours_asks_first_then_the_widget_is_always_open(owner_console, owner, widget):
    owner_console.post(HOURS, form(**{"mon-start-0": "09:00", "mon-end-0": "18:00"}))
    assert "Remove the business hours?" in owner_console.get(HOURS + "reset/").content.decode()
    assert BusinessHours.objects.filter(widget=widget).exists()
    assert owner_console.post(HOURS + "reset/").status_code == 303
    assert not BusinessHours.objects.filter(widget=widget).exists()
    entry = AuditEntry.objects.get(action="business_hours.deleted")
    assert str(entry.actor_id) == str(owner.pk)


def test_the_hours_are_the_console_widgets_only(owner_console, widget, other_widget):
    widget_services.set_business_hours(
        widget=other_widget,
        body={
            "enabled": True,
            "timezone": "Asia/Tokyo",
            "weekly": {day: [["01:00", "02:00"]] for day in DAYS},
            "holidays": [],
            "outside_hours": "hidden",
        },
    )
    html = owner_console.get(HOURS).content.decode()
    assert "<option selected>Asia/Tokyo</option>" not in html and 'value="01:00"' not in html
    owner_console.post(HOURS, form())
    assert widget_selectors.get_business_hours(other_widget)["timezone"] == "Asia/Tokyo"
    assert widget_selectors.get_business_hours(widget)["timezone"] == "Europe/Berlin"
