"""Statistics windows and buckets, calendar-anchored in Europe/Moscow (business_tz).

A window is [start, end): chats count when created inside it, messages, ratings and transfers
when they happen inside it. Whole Moscow days are read from the daily facts; a window edge that is
not a midnight leaves a partial day at that edge (`Window.split`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from zoneinfo import ZoneInfo

from apps.core.models import Widget
from apps.core.timeparse import EARLIEST_DAY, LATEST_DAY, business_tz, in_supported_range
from apps.widget import selectors as widget_selectors

PERIODS = ("today", "yesterday", "week", "month")
INTERVALS = ("day", "week", "month")
DEFAULT_DAYS = 30
MAX_BUCKETS = 366


class WindowError(ValueError):
    """A window that cannot be served; `field` names the parameter to blame."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field


def report_tz(*, widget_id: int) -> ZoneInfo:
    """The time zone of the widget's reports: its business-hours time zone when it has stored
    business hours, else Europe/Moscow (apps.stats.reports)."""
    # Read with the public config's cache (a business-hours PUT purges it): every visitor message's
    # statistics ask for it. The default hours (no row stored) are in the business time zone.
    name = widget_selectors.cached_business_hours(Widget(pk=widget_id)).get("timezone")
    return ZoneInfo(name) if name else business_tz()


def midnight(day: date) -> datetime:
    return datetime.combine(day, time.min, tzinfo=business_tz())


def local(moment: datetime) -> datetime:
    return moment.astimezone(business_tz())


def _shift_days(moment: datetime, days: int) -> datetime:
    """The same Moscow wall-clock time `days` later (earlier when negative)."""
    wall = local(moment).replace(tzinfo=None) + timedelta(days=days)
    return wall.replace(tzinfo=business_tz())


@dataclass(frozen=True)
class Window:
    start: datetime
    end: datetime

    @classmethod
    def for_period(cls, period: str, *, now: datetime) -> Window:
        """`today`, `yesterday`, `week` (from Monday) and `month` (from the 1st), in Moscow.
        A running period ends at the next midnight (nothing exists after now)."""
        today = local(now).date()
        tomorrow = today + timedelta(days=1)
        if period == "today":
            return cls(midnight(today), midnight(tomorrow))
        if period == "yesterday":
            return cls(midnight(today - timedelta(days=1)), midnight(today))
        if period == "week":
            return cls(midnight(today - timedelta(days=today.weekday())), midnight(tomorrow))
        if period == "month":
            return cls(midnight(today.replace(day=1)), midnight(tomorrow))
        raise WindowError("period", f"Unknown period {period!r}.")

    @classmethod
    def resolve(cls, *, period: str | None, start: datetime | None, end: datetime | None, now: datetime) -> Window:
        """The window of a request: `period`, or `from`/`to`, or the default (the trailing 30 Moscow
        days, today included). Only `to`: the 30 days before it. Only `from`: up to the end of today."""
        if period is not None:
            if start is not None or end is not None:
                raise WindowError("period", "Give either `period` or `from`/`to`, not both.")
            return cls.for_period(period, now=now)
        tomorrow = midnight(local(now).date() + timedelta(days=1))
        defaulted_end = end is None
        for name, value in (("from", start), ("to", end)):
            # MomentField refuses these already; a caller building a window itself gets the same rule.
            if value is not None and not in_supported_range(value):
                raise WindowError(name, f"Must be from {EARLIEST_DAY} to {LATEST_DAY} ({business_tz().key}).")
        if start is None and end is None:
            start, end = _shift_days(tomorrow, -DEFAULT_DAYS), tomorrow
        elif end is None:
            end = tomorrow
        elif start is None:
            start = _shift_days(end, -DEFAULT_DAYS)
        window = cls(local(start), local(end))
        if window.end <= window.start:
            if defaulted_end:
                raise WindowError("from", "Must be earlier than the end of today when `to` is omitted.")
            raise WindowError("to", "Must be later than `from`.")
        return window

    def split(self) -> tuple[tuple[date, date] | None, list[tuple[datetime, datetime]]]:
        """(whole days as [first, last) dates or None, partial days as [start, end) pieces)."""
        start, end = local(self.start), local(self.end)
        first_whole = start.date() if start == midnight(start.date()) else start.date() + timedelta(days=1)
        end_whole = end.date()  # the day holding `end` is not whole (a midnight `end` excludes it)
        if first_whole >= end_whole:
            if start.date() == end.date() or end == midnight(end.date()):
                return None, [(start, end)]
            return None, [(start, midnight(end.date())), (midnight(end.date()), end)]
        pieces = []
        if start != midnight(start.date()):
            pieces.append((start, midnight(first_whole)))
        if end != midnight(end.date()):
            pieces.append((midnight(end.date()), end))
        return (first_whole, end_whole), pieces


def _bucket_start(day: date, interval: str) -> date:
    if interval == "week":
        return day - timedelta(days=day.weekday())
    if interval == "month":
        return day.replace(day=1)
    return day


def _next_bucket(day: date, interval: str) -> date:
    if interval == "week":
        return day + timedelta(days=7)
    if interval == "month":
        return date(day.year + day.month // 12, day.month % 12 + 1, 1)
    return day + timedelta(days=1)


def _last_day(window: Window) -> date:
    end = local(window.end)
    return end.date() - timedelta(days=1) if end == midnight(end.date()) else end.date()


def bucket_count(window: Window, interval: str) -> int:
    first, last = local(window.start).date(), _last_day(window)
    if interval == "day":
        return (last - first).days + 1
    if interval == "week":
        return (_bucket_start(last, "week") - _bucket_start(first, "week")).days // 7 + 1
    return (last.year * 12 + last.month) - (first.year * 12 + first.month) + 1


def buckets(window: Window, interval: str) -> Iterator[tuple[datetime, datetime, date, date]]:
    """Calendar buckets (Moscow midnights, Mondays or 1sts) meeting the window, the first and last
    clipped to it: (from, to, first day, last day exclusive)."""
    first, last = local(window.start).date(), _last_day(window)
    day = _bucket_start(first, interval)
    while day <= last:
        following = _next_bucket(day, interval)
        yield max(midnight(day), local(window.start)), min(midnight(following), local(window.end)), day, following
        day = following
