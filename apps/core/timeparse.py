"""`from`/`to` parsing of the spec: any parseable date-time, interpreted in Europe/Moscow unless
it carries an explicit offset; a bare date means midnight of that day."""

from __future__ import annotations

from datetime import UTC, date, datetime, time
from zoneinfo import ZoneInfo

from django.conf import settings
from django.utils.dateparse import parse_date, parse_datetime


def business_tz() -> ZoneInfo:
    return ZoneInfo(settings.BUSINESS_TIME_ZONE)


# The moments a `from`/`to` may name. Outside them a date-time cannot be converted to UTC, bound
# into a database query or shifted by calendar arithmetic without overflowing (0001-01-01 in
# Moscow is still year 0 in UTC; 9999-12-31T23:59:59-14:00 is year 10000).
EARLIEST_DAY, LATEST_DAY = date(1900, 1, 1), date(9999, 1, 1)


def supported_range() -> tuple[datetime, datetime]:
    return (
        datetime.combine(EARLIEST_DAY, time.min, tzinfo=business_tz()),
        datetime.combine(LATEST_DAY, time.min, tzinfo=business_tz()),
    )


def in_supported_range(moment: datetime) -> bool:
    earliest, latest = supported_range()
    try:
        return earliest <= moment <= latest
    except OverflowError:
        return False


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


def format_moment(moment: datetime) -> str:
    """RFC 3339 text of an aware moment. Offsets with seconds (local mean time: Moscow was
    +02:30:17 before 1919) have no RFC 3339 spelling, so such a moment is written in UTC."""
    offset = moment.utcoffset()
    if offset is not None and offset.total_seconds() % 60:
        moment = moment.astimezone(UTC)
    return moment.isoformat()
