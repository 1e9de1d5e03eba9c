"""GET and PUT /v1/widget/business-hours."""

import pytest

from apps.widget.models import BusinessHours
from apps.widget.tests.conftest import idem
from tests.support.plugin import assert_problem

pytestmark = pytest.mark.django_db

HOURS = "/api/v1/widget/business-hours"
DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")


def body(**overrides) -> dict:
    weekly = {day: [] for day in DAYS}
    weekly["mon"] = [["09:00", "18:00"]]
    weekly["tue"] = [["09:00", "13:00"], ["14:00", "18:00"]]
    return {
        "enabled": True,
        "timezone": "Europe/Berlin",
        "weekly": weekly,
        "holidays": ["2026-12-31", "2027-01-01"],
        "outside_hours": "offline_form",
        **overrides,
    }


def week(**days) -> dict:
    return {day: days.get(day, []) for day in DAYS}


def put(client, data, **headers):
    return client.put(HOURS, data, format="json", **{**idem(), **headers})


def test_get_before_any_put_is_disabled_always_open(api, settings):
    data = api(scopes=["widget:read"]).get(HOURS).json()["data"]
    assert data == {
        "enabled": False,
        "timezone": settings.BUSINESS_TIME_ZONE,
        "weekly": {day: [] for day in DAYS},
        "holidays": [],
        "outside_hours": "offline_form",
    }


def test_put_replaces_the_whole_resource_and_get_reads_it_back(api, widget, purges):
    client = api()
    response = put(client, body())
    assert response.status_code == 200, response.content
    assert response.json()["data"] == body()
    second = body(weekly=week(sun=[["00:00", "24:00"]]), holidays=[], outside_hours="hidden")
    assert put(client, second).json()["data"] == second
    assert client.get(HOURS).json()["data"] == second
    assert widget.pk in purges


def test_intervals_may_touch_and_end_at_24_00(api):
    data = body(weekly=week(fri=[["00:00", "12:00"], ["12:00", "24:00"]]))
    assert put(api(), data).status_code == 200


@pytest.mark.parametrize(
    "change, key",
    [
        ({"enabled": "yes"}, "enabled"),
        ({"timezone": "Mars/Olympus"}, "timezone"),
        ({"timezone": "+03:00"}, "timezone"),
        ({"timezone": "localtime"}, "timezone"),
        ({"timezone": 3}, "timezone"),
        ({"weekly": []}, "weekly"),
        ({"weekly": {day: [] for day in DAYS[:6]}}, "weekly.sun"),
        ({"weekly": {**week(), "holiday": []}}, "weekly.holiday"),
        ({"weekly": week(mon="09:00-18:00")}, "weekly.mon"),
        (
            {
                "weekly": week(
                    mon=[["09:00", "10:00"]] * 2 + [["11:00", "12:00"], ["13:00", "14:00"], ["15:00", "16:00"]]
                )
            },
            "weekly.mon",
        ),
        ({"weekly": week(mon=[["09:00"]])}, "weekly.mon.0"),
        ({"weekly": week(mon=[["9:00", "18:00"]])}, "weekly.mon.0"),
        ({"weekly": week(mon=[["09:00", "18:60"]])}, "weekly.mon.0"),
        ({"weekly": week(mon=[["24:00", "24:00"]])}, "weekly.mon.0"),
        ({"weekly": week(mon=[["09:00", "24:30"]])}, "weekly.mon.0"),
        ({"weekly": week(mon=[["18:00", "09:00"]])}, "weekly.mon.0"),
        ({"weekly": week(mon=[["09:00", "09:00"]])}, "weekly.mon.0"),
        ({"weekly": week(mon=[[9, 18]])}, "weekly.mon.0"),
        ({"weekly": week(mon=[["09:00", "13:00"], ["12:00", "18:00"]])}, "weekly.mon.1"),
        ({"weekly": week(mon=[["12:00", "18:00"], ["09:00", "13:00"]])}, "weekly.mon.0"),
        ({"holidays": "2026-12-31"}, "holidays"),
        ({"holidays": ["31.12.2026"]}, "holidays.0"),
        ({"holidays": ["2026-02-30"]}, "holidays.0"),
        ({"holidays": ["2026-12-31", "2026-12-31"]}, "holidays.1"),
        ({"holidays": [f"2026-01-{d:02d}" for d in range(1, 32)] * 4}, "holidays"),
        ({"outside_hours": "closed"}, "outside_hours"),
        ({"outside_hours": None}, "outside_hours"),
        ({"extra": 1}, "extra"),
    ],
)
def test_put_refuses_each_invalid_member_and_stores_nothing(api, widget, purges, change, key):
    errors = assert_problem(put(api(), body(**change)), 422, "validation_failed")["errors"]
    assert key in errors, errors
    assert not BusinessHours.objects.filter(widget=widget).exists()
    assert purges == []


@pytest.mark.parametrize("missing", ["enabled", "timezone", "weekly", "holidays", "outside_hours"])
def test_put_needs_every_member(api, missing):
    data = body()
    del data[missing]
    assert missing in assert_problem(put(api(), data), 422)["errors"]


def test_put_refuses_a_body_that_is_not_an_object(api):
    assert_problem(put(api(), ["enabled"]), 422)


def test_a_refused_put_keeps_the_previous_hours(api):
    client = api()
    put(client, body())
    assert_problem(put(client, body(timezone="Nowhere/Else")), 422)
    assert client.get(HOURS).json()["data"] == body()


def test_put_needs_an_idempotency_key(api):
    assert_problem(api().put(HOURS, body(), format="json"), 400, "idempotency_key_missing")


def test_business_hours_scopes(api):
    assert_problem(api(scopes=["widget:write"]).get(HOURS), 403, "missing_scope")
    assert_problem(put(api(scopes=["widget:read"]), body()), 403, "missing_scope")


def test_business_hours_need_a_token(client):
    assert_problem(client.get(HOURS), 401)
