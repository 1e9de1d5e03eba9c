"""`from`/`to` parsing of the spec: any parseable date-time, interpreted in Europe/Moscow unless
it carries an explicit offset; a bare date means midnight of that day."""

from __future__ import annotations

from datetime import date, datetime, time
from zoneinfo import ZoneInfo

from django.conf import settings
from django.utils.dateparse import parse_date, parse_datetime


def business_tz() -> ZoneInfo:
    return ZoneInfo(settings.BUSINESS_TIME_ZONE)


def parse_moment(raw: str) -> datetime:
    """Raise ValueError when `raw` is not a date or date-time."""
    text = raw.strip()
    if not text:
        raise ValueError("empty")
    if text.endswith(("z", "Z")):
        text = text[:-1] + "+00:00"
    parsed: datetime | date | None
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        parsed = parse_datetime(text) or parse_date(text)
    if parsed is None:
        raise ValueError(f"not a date-time: {raw!r}")
    if not isinstance(parsed, datetime):
        parsed = datetime.combine(parsed, time.min)
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=business_tz())
    return parsed
