"""build_report: the owner's reports page figures from the statistics rollups."""

from __future__ import annotations

import math
from datetime import date

import pytest

from apps.stats.reports import ReportRangeError, build_report

from .conftest import msk

pytestmark = pytest.mark.django_db


def test_a_day_with_a_missed_and_an_answered_chat(widget, talk):
    talk.at(msk(2025, 1, 15, 10))
    answered = talk.visitor()
    talk.visitor(channel="telegram")
    talk.at(msk(2025, 1, 15, 10, 1)).reply(answered)
    report = build_report(widget=widget, start=date(2025, 1, 14), end=date(2025, 1, 15))
    assert report["days"] == ["2025-01-14", "2025-01-15"]
    assert report["chats_by_channel"] == {"telegram": [0, 1], "widget": [0, 1]}
    assert report["handling"]["missed"] == 1
    assert report["totals"]["chats"] == 2


def test_a_range_longer_than_366_days_is_refused(widget):
    with pytest.raises(ReportRangeError):
        build_report(widget=widget, start=date(2024, 1, 1), end=date(2025, 1, 1))


def test_report_days_are_the_widgets_business_hours_days(widget, talk):
    from apps.widget.hours import default_hours
    from apps.widget.services import set_business_hours

    set_business_hours(widget=widget, body=default_hours("America/New_York"))
    # 03:00 on the 15th in Moscow is 19:00 on the 14th in New York
    chat = talk.at(msk(2025, 1, 15, 3)).visitor()
    talk.at(msk(2025, 1, 15, 3, 1)).rate(chat, 5)
    report = build_report(widget=widget, start=date(2025, 1, 14), end=date(2025, 1, 15))
    assert report["tz"] == "America/New_York"
    assert report["chats_by_channel"] == {"widget": [1, 0]}
    assert report["rating"]["count"] == 1


def test_a_later_change_takes_the_chat_back_from_the_day_it_was_counted_on(widget, talk):
    from apps.widget.hours import default_hours
    from apps.widget.services import set_business_hours

    chat = talk.at(msk(2025, 1, 15, 3)).visitor()  # counted on the 15th (Moscow)
    set_business_hours(widget=widget, body=default_hours("America/New_York"))
    talk.at(msk(2025, 1, 15, 3, 1)).reply(chat)  # now the 14th in New York
    report = build_report(widget=widget, start=date(2025, 1, 14), end=date(2025, 1, 15))
    assert report["chats_by_channel"] == {"widget": [1, 0]}
    assert report["handling"]["missed"] == 0 and report["handling"]["human"] == 1


def test_histogram_buckets_hold_their_edges_and_read_within_the_bound():
    from apps.stats import histogram

    assert histogram.bucket_of(0) == 0 and histogram.bucket_of(249) == 0 and histogram.bucket_of(250) == 1
    for index in range(1, histogram.BUCKETS - 1):
        low = math.ceil(histogram.lower_bound(index))
        assert histogram.bucket_of(low) == index
        assert histogram.bucket_of(low - 1) == index - 1
    assert histogram.bucket_of(10**12) == histogram.BUCKETS - 1
    for ms in (300, 1_000, 45_000, 3_600_000, 86_400_000 * 5):
        counts = [0] * histogram.BUCKETS
        counts[histogram.bucket_of(ms)] = 1
        assert abs(histogram.percentile_ms(counts, 0.5) - ms) <= (2 ** (1 / 8) - 1) * ms + 1
    assert histogram.percentile_ms([0] * histogram.BUCKETS, 0.5) is None


@pytest.mark.parametrize(
    ("start", "end"),
    [(date(2025, 1, 2), date(2025, 1, 1)), (date(2025, 1, 1), date(2026, 1, 2)), (date(9999, 1, 1), date(9999, 1, 2))],
)
def test_a_range_the_report_cannot_serve_is_refused_with_a_reason(widget, start, end):
    with pytest.raises(ReportRangeError, match=r"\w"):
        build_report(widget=widget, start=start, end=end)


def test_the_statements_do_not_grow_with_the_days_or_the_chats(widget, talk, django_assert_max_num_queries):
    for day in range(1, 20):
        chat = talk.at(msk(2025, 1, day, 10)).visitor(channel=f"c{day % 4}")
        talk.at(msk(2025, 1, day, 10, 1)).reply(chat)
    with django_assert_max_num_queries(9):
        build_report(widget=widget, start=date(2024, 1, 1), end=date(2024, 12, 31))
    with django_assert_max_num_queries(9):
        build_report(widget=widget, start=date(2025, 1, 1), end=date(2025, 12, 31))
