"""Windows and buckets, calendar-anchored in Europe/Moscow, computed by hand."""

from datetime import UTC, date, datetime

import pytest

from apps.stats.windows import Window, WindowError, bucket_count, buckets

from .conftest import msk


def utc(*args) -> datetime:
    return datetime(*args, tzinfo=UTC)


# --- periods --------------------------------------------------------------------------------------------


def test_today_turns_at_moscow_midnight_not_utc_midnight():
    # 20:59:59 UTC is 23:59:59 in Moscow: still Jan 14 there.
    assert Window.for_period("today", now=utc(2025, 1, 14, 20, 59, 59)) == Window(msk(2025, 1, 14), msk(2025, 1, 15))
    # 21:00 UTC is Moscow midnight: Jan 15 has begun although UTC is still on Jan 14.
    assert Window.for_period("today", now=utc(2025, 1, 14, 21, 0)) == Window(msk(2025, 1, 15), msk(2025, 1, 16))


def test_yesterday_across_a_month_and_a_leap_day():
    assert Window.for_period("yesterday", now=msk(2024, 3, 1, 0, 0, 1)) == Window(msk(2024, 2, 29), msk(2024, 3, 1))


@pytest.mark.parametrize(
    "now, monday",
    [
        (msk(2025, 1, 13, 0, 0), msk(2025, 1, 13)),  # Monday 00:00: the week starts now
        (msk(2025, 1, 12, 23, 59, 59), msk(2025, 1, 6)),  # Sunday 23:59:59: still last week
        (msk(2025, 1, 15, 12), msk(2025, 1, 13)),  # Wednesday
    ],
)
def test_week_runs_from_monday(now, monday):
    window = Window.for_period("week", now=now)
    assert window.start == monday
    assert window.end == msk(now.year, now.month, now.day + 1)


def test_month_runs_from_the_first():
    assert Window.for_period("month", now=msk(2025, 1, 31, 23, 59, 59)) == Window(msk(2025, 1, 1), msk(2025, 2, 1))
    assert Window.for_period("month", now=msk(2025, 2, 1)) == Window(msk(2025, 2, 1), msk(2025, 2, 2))


# --- from / to / default ---------------------------------------------------------------------------


def test_default_window_is_the_trailing_30_moscow_days_including_today():
    window = Window.resolve(period=None, start=None, end=None, now=msk(2025, 3, 10, 15))
    assert window == Window(msk(2025, 2, 9), msk(2025, 3, 11))
    assert (window.end - window.start).days == 30


def test_only_to_gives_the_30_days_before_it_and_only_from_runs_to_the_end_of_today():
    now = msk(2025, 3, 10, 15)
    assert Window.resolve(period=None, start=None, end=msk(2025, 2, 1, 6), now=now).start == msk(2025, 1, 2, 6)
    assert Window.resolve(period=None, start=msk(2025, 3, 1), end=None, now=now).end == msk(2025, 3, 11)


def test_an_explicit_offset_is_honoured_and_the_window_is_rendered_in_moscow():
    window = Window.resolve(period=None, start=utc(2025, 1, 1, 21), end=utc(2025, 1, 2, 21), now=msk(2025, 3, 1))
    assert window.start.isoformat() == "2025-01-02T00:00:00+03:00"
    assert window.end.isoformat() == "2025-01-03T00:00:00+03:00"


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"period": "today", "start": msk(2025, 1, 1), "end": None}, "period"),
        ({"period": "week", "start": None, "end": msk(2025, 1, 1)}, "period"),
        ({"period": None, "start": msk(2025, 1, 2), "end": msk(2025, 1, 2)}, "to"),
        ({"period": None, "start": msk(2025, 1, 3), "end": msk(2025, 1, 2)}, "to"),
        ({"period": None, "start": msk(2025, 3, 2), "end": None}, "from"),  # after the end of today
        ({"period": None, "start": msk(1800, 1, 1), "end": None}, "from"),
        ({"period": None, "start": None, "end": msk(9999, 6, 1)}, "to"),
    ],
)
def test_refused_windows_name_the_parameter(kwargs, field):
    with pytest.raises(WindowError) as raised:
        Window.resolve(now=msk(2025, 3, 1), **kwargs)
    assert raised.value.field == field


# --- whole days and partial edges ---------------------------------------------------------------------


def test_a_midnight_to_midnight_window_is_all_whole_days():
    assert Window(msk(2025, 1, 1), msk(2025, 1, 3)).split() == ((date(2025, 1, 1), date(2025, 1, 3)), [])


def test_edges_inside_days_leave_partial_pieces():
    whole, pieces = Window(msk(2025, 1, 1, 12), msk(2025, 1, 4, 6)).split()
    assert whole == (date(2025, 1, 2), date(2025, 1, 4))
    assert pieces == [(msk(2025, 1, 1, 12), msk(2025, 1, 2)), (msk(2025, 1, 4), msk(2025, 1, 4, 6))]


@pytest.mark.parametrize(
    "start, end, pieces",
    [
        (msk(2025, 1, 1, 12), msk(2025, 1, 1, 18), [(msk(2025, 1, 1, 12), msk(2025, 1, 1, 18))]),
        (msk(2025, 1, 1, 12), msk(2025, 1, 2), [(msk(2025, 1, 1, 12), msk(2025, 1, 2))]),
        (msk(2025, 1, 1), msk(2025, 1, 1, 6), [(msk(2025, 1, 1), msk(2025, 1, 1, 6))]),
        (
            msk(2025, 1, 1, 23, 59),
            msk(2025, 1, 2, 0, 1),
            [(msk(2025, 1, 1, 23, 59), msk(2025, 1, 2)), (msk(2025, 1, 2), msk(2025, 1, 2, 0, 1))],
        ),
    ],
)
def test_windows_without_a_whole_day(start, end, pieces):
    assert Window(start, end).split() == (None, pieces)


# --- buckets ---------------------------------------------------------------------------------------------


def test_a_year_of_days_fits_and_a_day_more_than_366_does_not():
    assert bucket_count(Window(msk(2024, 1, 1), msk(2025, 1, 1)), "day") == 366  # leap year
    assert bucket_count(Window(msk(2024, 1, 1), msk(2025, 1, 1, 0, 0, 1)), "day") == 367


def test_week_buckets_start_on_mondays_and_are_clipped_to_the_window():
    window = Window(msk(2025, 1, 1, 12), msk(2025, 1, 15))  # Wednesday noon to Wednesday midnight
    assert bucket_count(window, "week") == 3
    assert [(a, b) for a, b, _, _ in buckets(window, "week")] == [
        (msk(2025, 1, 1, 12), msk(2025, 1, 6)),
        (msk(2025, 1, 6), msk(2025, 1, 13)),
        (msk(2025, 1, 13), msk(2025, 1, 15)),
    ]


def test_month_buckets_start_on_the_first_across_a_year_end():
    window = Window(msk(2024, 11, 15), msk(2025, 2, 1))
    assert bucket_count(window, "month") == 3
    assert [a for a, _, _, _ in buckets(window, "month")] == [msk(2024, 11, 15), msk(2024, 12, 1), msk(2025, 1, 1)]


def test_day_buckets_turn_at_moscow_midnight():
    window = Window(utc(2025, 1, 1, 20), utc(2025, 1, 2, 22))  # 23:00 Jan 1 to 01:00 Jan 3, Moscow
    assert [(a.isoformat(), b.isoformat()) for a, b, _, _ in buckets(window, "day")] == [
        ("2025-01-01T23:00:00+03:00", "2025-01-02T00:00:00+03:00"),
        ("2025-01-02T00:00:00+03:00", "2025-01-03T00:00:00+03:00"),
        ("2025-01-03T00:00:00+03:00", "2025-01-03T01:00:00+03:00"),
    ]
