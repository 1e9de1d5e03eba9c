"""build_report: the owner's reports page figures from the statistics rollups."""

from __future__ import annotations

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
