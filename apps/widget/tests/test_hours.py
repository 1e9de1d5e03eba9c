"""The one computation of open/closed and the next opening (apps.widget.hours.state_at)."""

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from apps.widget import hours

BERLIN = ZoneInfo("Europe/Berlin")
NEW_YORK = ZoneInfo("America/New_York")


def week(**days) -> dict:
    return {day: days.get(day, []) for day in hours.DAYS}


def resource(weekly=None, *, zone="Europe/Berlin", holidays=(), mode="offline_form", enabled=True) -> dict:
    return {
        "enabled": enabled,
        "timezone": zone,
        "weekly": weekly or week(),
        "holidays": list(holidays),
        "outside_hours": mode,
    }


def at(zone, *args) -> datetime:
    return datetime(*args, tzinfo=zone)


WORKDAYS = week(**{d: [["09:00", "18:00"]] for d in ("mon", "tue", "wed", "thu", "fri")})


def test_disabled_hours_are_always_open():
    state = hours.state_at(resource(week(), enabled=False), at(BERLIN, 2026, 3, 1, 3, 0))
    assert state.open and state.opens_at is None and not state.enabled


def test_inside_an_interval_is_open_and_its_end_is_closed():
    hours_ = resource(WORKDAYS)
    assert hours.state_at(hours_, at(BERLIN, 2026, 11, 2, 9, 0)).open  # Monday 09:00
    assert hours.state_at(hours_, at(BERLIN, 2026, 11, 2, 17, 59)).open
    closed = hours.state_at(hours_, at(BERLIN, 2026, 11, 2, 18, 0))
    assert not closed.open
    assert closed.opens_at == at(BERLIN, 2026, 11, 3, 9, 0)
    assert closed.opens_at_iso() == "2026-11-03T09:00:00+01:00"
    assert closed.opens_at_short() == "09:00 03.11"


def test_the_day_is_read_in_the_widgets_time_zone_not_utc():
    # Monday 08:30 UTC is 09:30 in Berlin (open) but 03:30 in New York (closed).
    moment = datetime(2026, 11, 2, 8, 30, tzinfo=UTC)
    assert hours.state_at(resource(WORKDAYS), moment).open
    state = hours.state_at(resource(WORKDAYS, zone="America/New_York"), moment)
    assert not state.open and state.opens_at == at(NEW_YORK, 2026, 11, 2, 9, 0)


def test_an_end_of_24_00_keeps_the_last_minute_of_the_day_open():
    hours_ = resource(week(fri=[["20:00", "24:00"]]))
    assert hours.state_at(hours_, at(BERLIN, 2026, 11, 6, 23, 59)).open
    assert not hours.state_at(hours_, at(BERLIN, 2026, 11, 7, 0, 0)).open


def test_intervals_across_midnight_are_one_opening():
    hours_ = resource(week(mon=[["22:00", "24:00"]], tue=[["00:00", "02:00"]]))
    assert hours.state_at(hours_, at(BERLIN, 2026, 11, 2, 23, 30)).open
    assert hours.state_at(hours_, at(BERLIN, 2026, 11, 3, 0, 0)).open
    assert hours.state_at(hours_, at(BERLIN, 2026, 11, 3, 1, 59)).open
    after = hours.state_at(hours_, at(BERLIN, 2026, 11, 3, 2, 0))
    assert not after.open and after.opens_at == at(BERLIN, 2026, 11, 9, 22, 0)
    before = hours.state_at(hours_, at(BERLIN, 2026, 11, 2, 21, 0))
    assert before.opens_at == at(BERLIN, 2026, 11, 2, 22, 0)


def test_wall_clock_hours_survive_the_spring_dst_change_in_berlin():
    # Berlin moves from +01:00 to +02:00 on Sunday 29 March 2026 at 02:00.
    hours_ = resource(week(fri=[["09:00", "18:00"]], mon=[["09:00", "18:00"]]))
    friday = hours.state_at(hours_, datetime(2026, 3, 27, 8, 0, tzinfo=UTC))  # 09:00 CET
    monday = hours.state_at(hours_, datetime(2026, 3, 30, 7, 0, tzinfo=UTC))  # 09:00 CEST
    assert friday.open and monday.open
    assert not hours.state_at(hours_, datetime(2026, 3, 30, 6, 59, tzinfo=UTC)).open
    closed = hours.state_at(hours_, datetime(2026, 3, 28, 12, 0, tzinfo=UTC))
    assert closed.opens_at_iso() == "2026-03-30T09:00:00+02:00"
    assert closed.opens_at == datetime(2026, 3, 30, 7, 0, tzinfo=UTC)


def test_an_opening_in_the_skipped_hour_maps_to_the_real_instant():
    hours_ = resource(week(sun=[["02:30", "05:00"]]))
    state = hours.state_at(hours_, at(BERLIN, 2026, 3, 28, 12, 0))
    assert state.opens_at == datetime(2026, 3, 29, 1, 30, tzinfo=UTC)
    assert state.opens_at_iso() == "2026-03-29T03:30:00+02:00"


def test_wall_clock_hours_survive_the_autumn_dst_change_in_new_york():
    # New York moves from -04:00 to -05:00 on Sunday 1 November 2026 at 02:00.
    hours_ = resource(week(sat=[["09:00", "17:00"]], mon=[["09:00", "17:00"]]), zone="America/New_York")
    assert hours.state_at(hours_, datetime(2026, 10, 31, 13, 0, tzinfo=UTC)).open  # 09:00 EDT
    assert hours.state_at(hours_, datetime(2026, 11, 2, 14, 0, tzinfo=UTC)).open  # 09:00 EST
    assert not hours.state_at(hours_, datetime(2026, 11, 2, 13, 30, tzinfo=UTC)).open  # 08:30 EST
    closed = hours.state_at(hours_, datetime(2026, 11, 1, 12, 0, tzinfo=UTC))
    assert closed.opens_at_iso() == "2026-11-02T09:00:00-05:00"


def test_a_holiday_closes_its_whole_local_day():
    hours_ = resource(WORKDAYS, holidays=["2026-12-31"])
    state = hours.state_at(hours_, at(BERLIN, 2026, 12, 31, 12, 0))
    assert not state.open
    assert state.opens_at == at(BERLIN, 2027, 1, 1, 9, 0)


def test_opens_at_skips_a_long_weekend_of_holidays():
    # Friday 1 May 2026 and Monday 4 May are holidays: closed from Thursday evening to Tuesday.
    hours_ = resource(WORKDAYS, holidays=["2026-05-01", "2026-05-04"])
    state = hours.state_at(hours_, at(BERLIN, 2026, 4, 30, 18, 30))
    assert not state.open
    assert state.opens_at == at(BERLIN, 2026, 5, 5, 9, 0)
    assert state.opens_at_short() == "09:00 05.05"


def test_opens_at_is_null_beyond_14_days():
    start = datetime(2026, 6, 1).date()
    holidays = [(start + timedelta(days=n)).isoformat() for n in range(16)]
    state = hours.state_at(resource(WORKDAYS, holidays=holidays), at(BERLIN, 2026, 6, 1, 12, 0))
    assert not state.open and state.opens_at is None and state.opens_at_short() == ""


def test_an_opening_exactly_14_days_ahead_is_announced_and_a_later_one_is_not():
    hours_ = resource(week(mon=[["12:00", "13:00"]]))
    now = at(BERLIN, 2026, 6, 1, 12, 0)  # a Monday that is a holiday, as is the next one
    announced = hours.state_at({**hours_, "holidays": ["2026-06-01", "2026-06-08"]}, now)
    assert not announced.open and announced.opens_at == now + timedelta(days=14)
    beyond = hours.state_at({**hours_, "holidays": ["2026-06-01", "2026-06-08", "2026-06-15"]}, now)
    assert beyond.opens_at is None


def test_an_empty_week_is_always_closed_with_no_opening():
    state = hours.state_at(resource(week()), at(BERLIN, 2026, 6, 1, 12, 0))
    assert not state.open and state.opens_at is None


@pytest.mark.parametrize(
    "day, when, expected",
    [
        ("full", (2026, 11, 2, 3, 0), True),
        (None, (2026, 11, 2, 12, 0), False),
        ({"from": "10:00", "to": "12:00"}, (2026, 11, 2, 11, 0), True),
        ({"from": "10:00", "to": "12:00"}, (2026, 11, 2, 12, 0), False),
    ],
)
def test_a_departments_week_is_read_in_the_widgets_time_zone(day, when, expected):
    schedule = {"Monday": day}
    assert hours.department_open_at(schedule, "Europe/Berlin", at(BERLIN, *when)) is expected


def test_holidays_that_are_not_dates_are_each_refused_whatever_their_json_type():
    body = {**hours.default_hours("Europe/Berlin"), "holidays": [["2026-01-01"], {"a": 1}, "2026-01-01", "2026-01-01"]}
    cleaned, errors = hours.validate(body)
    assert cleaned == {}
    assert errors == {
        "holidays.0": ["A date YYYY-MM-DD."],
        "holidays.1": ["A date YYYY-MM-DD."],
        "holidays.3": ["This date is listed twice."],
    }
