"""Due times in business seconds: apps.widget.hours.add_open_seconds walks the widget's week and
holidays as wall-clock intervals of its IANA zone (product-decisions.md "Routing that never loses a
visitor": with `business_hours_only` the clocks stop while the widget is closed)."""

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from apps.widget.hours import DAYS, add_open_seconds

BERLIN = ZoneInfo("Europe/Berlin")
HOUR = 3600


def berlin(*args) -> datetime:
    return datetime(*args, tzinfo=BERLIN)


def hours(weekly: dict | None = None, *, holidays=(), enabled=True, everyday=None) -> dict:
    week = {day: [] for day in DAYS}
    if everyday is not None:
        week = {day: list(everyday) for day in DAYS}
    week.update(weekly or {})
    return {
        "enabled": enabled,
        "timezone": "Europe/Berlin",
        "weekly": week,
        "holidays": list(holidays),
        "outside_hours": "offline_form",
    }


OFFICE = hours({day: [["09:00", "17:00"]] for day in ("mon", "tue", "wed", "thu", "fri")})


def test_disabled_hours_are_always_open():
    start = berlin(2026, 12, 5, 12, 0)  # a Saturday
    assert add_open_seconds(hours(enabled=False), start, 600) == start + timedelta(seconds=600)


def test_a_week_without_any_interval_counts_plain_seconds():
    start = berlin(2026, 12, 5, 12, 0)
    assert add_open_seconds(hours(), start, 600) == start + timedelta(seconds=600)


def test_inside_an_interval_the_time_is_plain():
    assert add_open_seconds(OFFICE, berlin(2026, 11, 30, 10, 0), HOUR) == berlin(2026, 11, 30, 11, 0)


def test_the_end_of_the_interval_is_reachable():
    assert add_open_seconds(OFFICE, berlin(2026, 11, 30, 10, 0), 7 * HOUR) == berlin(2026, 11, 30, 17, 0)


def test_the_weekend_does_not_count():
    # Friday 16:00 + 2 h: one hour on Friday, one on Monday
    assert add_open_seconds(OFFICE, berlin(2026, 12, 4, 16, 0), 2 * HOUR) == berlin(2026, 12, 7, 10, 0)


def test_a_start_while_closed_waits_for_the_opening():
    assert add_open_seconds(OFFICE, berlin(2026, 12, 5, 12, 0), 60) == berlin(2026, 12, 7, 9, 1)
    assert add_open_seconds(OFFICE, berlin(2026, 12, 1, 7, 30), 60) == berlin(2026, 12, 1, 9, 1)
    assert add_open_seconds(OFFICE, berlin(2026, 12, 1, 20, 0), 60) == berlin(2026, 12, 2, 9, 1)


def test_a_holiday_closes_its_whole_day():
    office = hours(OFFICE["weekly"], holidays=["2026-12-07"])
    assert add_open_seconds(office, berlin(2026, 12, 4, 16, 0), 2 * HOUR) == berlin(2026, 12, 8, 10, 0)


def test_seconds_spanning_several_days():
    # three whole working days (8 h each) and one more hour, from Monday's opening
    assert add_open_seconds(OFFICE, berlin(2026, 11, 30, 9, 0), 3 * 8 * HOUR + HOUR) == berlin(2026, 12, 3, 10, 0)


def test_the_largest_policy_time_across_weekends_exactly():
    # 604800 s = 168 h = 21 working days of 8 h: Friday 2026-12-04 09:00 + 21 working days
    due = add_open_seconds(OFFICE, berlin(2026, 12, 4, 9, 0), 604800)
    assert due == berlin(2027, 1, 1, 17, 0)


def test_several_intervals_a_day_skip_the_break():
    lunch = hours({"mon": [["09:00", "12:00"], ["13:00", "17:00"]]})
    assert add_open_seconds(lunch, berlin(2026, 11, 30, 11, 0), 2 * HOUR) == berlin(2026, 11, 30, 14, 0)


def test_an_opening_across_midnight_is_one_opening():
    night = hours({"mon": [["22:00", "24:00"]], "tue": [["00:00", "02:00"]]})
    assert add_open_seconds(night, berlin(2026, 11, 30, 23, 0), 2 * HOUR) == berlin(2026, 12, 1, 1, 0)


def test_dst_spring_forward_keeps_wall_clock_intervals():
    # Berlin moves 02:00 -> 03:00 on Sunday 2026-03-29. Saturday 16:00 CET + 2 h of a 09:00-17:00
    # week: one hour on Saturday, one on Sunday from 09:00 CEST (07:00 UTC), due 10:00 CEST.
    daily = hours(everyday=[["09:00", "17:00"]])
    due = add_open_seconds(daily, berlin(2026, 3, 28, 16, 0), 2 * HOUR)
    assert due == berlin(2026, 3, 29, 10, 0) and due == datetime(2026, 3, 29, 8, 0, tzinfo=UTC)


def test_dst_spring_forward_day_is_an_hour_shorter():
    # Sunday 00:00-06:00 local holds five real hours that night: the sixth hour comes on Monday.
    nights = hours(everyday=[["00:00", "06:00"]])
    due = add_open_seconds(nights, berlin(2026, 3, 29, 0, 0), 6 * HOUR)
    assert due == berlin(2026, 3, 30, 1, 0) and due == datetime(2026, 3, 29, 23, 0, tzinfo=UTC)


def test_dst_fall_back_day_is_an_hour_longer():
    # Berlin moves 03:00 -> 02:00 on Sunday 2026-10-25: 00:00-06:00 local holds seven real hours.
    nights = hours(everyday=[["00:00", "06:00"]])
    start = berlin(2026, 10, 25, 0, 0)
    assert add_open_seconds(nights, start, 7 * HOUR) == datetime(2026, 10, 25, 5, 0, tzinfo=UTC)
    assert add_open_seconds(nights, start, 7 * HOUR) == berlin(2026, 10, 25, 6, 0)
    assert add_open_seconds(nights, start, 7 * HOUR + 60) == berlin(2026, 10, 26, 0, 1)


def test_dst_fall_back_across_the_weekend():
    # Friday 2026-10-23 16:00 CEST + 2 h of the office week: due Monday 10:00 CET (09:00 UTC).
    due = add_open_seconds(OFFICE, berlin(2026, 10, 23, 16, 0), 2 * HOUR)
    assert due == datetime(2026, 10, 26, 9, 0, tzinfo=UTC)


@pytest.mark.parametrize("zone_start", [datetime(2026, 12, 4, 15, 0, tzinfo=UTC), berlin(2026, 12, 4, 16, 0)])
def test_the_start_may_be_given_in_any_zone(zone_start):
    assert add_open_seconds(OFFICE, zone_start, 2 * HOUR) == berlin(2026, 12, 7, 10, 0)
