"""Business hours (product-decisions.md "Business hours that act"): the stored shape, its validation,
and the one computation of open/closed and the next opening.

Every reader asks `state_at` (through `selectors.business_hours_state`): the visitor config (`open`,
`opens_at`, `online`), the AI hand-over (`ai_only`), presence in the console and a department's
openness. Times are wall-clock times of the widget's IANA time zone (zoneinfo), so an interval
`09:00`-`18:00` stays 09:00-18:00 local across a DST change; a holiday closes its whole local day.
A day's intervals end at `24:00` at the latest; `mon [22:00, 24:00]` followed by `tue [00:00, 02:00]`
is one opening across midnight.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from functools import lru_cache
from zoneinfo import ZoneInfo, available_timezones

DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
MODES = ("offline_form", "ai_only", "hidden")
MAX_INTERVALS = 4
MAX_HOLIDAYS = 100
# An opening further away than this is not announced (`opens_at` null).
HORIZON = timedelta(days=14)
MEMBERS = ("enabled", "timezone", "weekly", "holidays", "outside_hours")

_TIME = re.compile(r"^([01]\d|2[0-3]):([0-5]\d)$|^24:00$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def default_hours(timezone_name: str) -> dict:
    """What GET answers before the first PUT: disabled, so always open."""
    return {
        "enabled": False,
        "timezone": timezone_name,
        "weekly": {day: [] for day in DAYS},
        "holidays": [],
        "outside_hours": "offline_form",
    }


@lru_cache(maxsize=1)
def _zone_names() -> frozenset[str]:
    """The IANA names. A system time zone database also holds `localtime`, a link to the host's own
    zone, which is no IANA name and would make the widget's hours depend on the machine."""
    return frozenset(available_timezones()) - {"localtime"}


def _minutes(value: str) -> int:
    hours, minutes = value.split(":")
    return int(hours) * 60 + int(minutes)


# --- validation ---------------------------------------------------------------------------------------


def _check_day(intervals: object, path: str, errors: dict) -> None:
    if not isinstance(intervals, list):
        errors[path] = ["A list of [start, end] intervals."]
        return
    if len(intervals) > MAX_INTERVALS:
        errors[path] = [f"At most {MAX_INTERVALS} intervals a day."]
        return
    spans = []
    for index, interval in enumerate(intervals):
        where = f"{path}.{index}"
        if not isinstance(interval, list) or len(interval) != 2 or not all(isinstance(v, str) for v in interval):
            errors[where] = ['An interval is ["HH:MM", "HH:MM"].']
            continue
        start, end = interval
        if not _TIME.match(start) or start == "24:00":
            errors[where] = ["The start is HH:MM from 00:00 to 23:59."]
            continue
        if not _TIME.match(end):
            errors[where] = ["The end is HH:MM from 00:01 to 24:00."]
            continue
        if _minutes(start) >= _minutes(end):
            errors[where] = ["The start must be before the end."]
            continue
        spans.append((_minutes(start), _minutes(end), index))
    spans.sort()
    for (_, previous_end, _), (start, _, index) in zip(spans, spans[1:], strict=False):
        if start < previous_end:
            errors.setdefault(f"{path}.{index}", ["The interval overlaps another one of the day."])


def validate(body: object) -> tuple[dict, dict]:
    """(the hours to store, errors by dotted path). A PUT names every member; nothing else."""
    if not isinstance(body, dict):
        return {}, {"non_field_errors": ["A JSON object is required."]}
    errors: dict[str, list[str]] = {}
    for name in sorted(set(body) - set(MEMBERS)):
        errors[name] = ["Unknown field."]
    for name in MEMBERS:
        if name not in body:
            errors[name] = ["This field is required (PUT replaces the whole resource)."]
    if "enabled" in body and not isinstance(body["enabled"], bool):
        errors["enabled"] = ["Must be true or false."]
    zone = body.get("timezone")
    if "timezone" in body and (not isinstance(zone, str) or zone not in _zone_names()):
        errors["timezone"] = ["Must be an IANA time zone name, such as Europe/Berlin."]
    weekly = body.get("weekly")
    if "weekly" in body:
        if not isinstance(weekly, dict):
            errors["weekly"] = ["An object naming the seven days mon..sun."]
        else:
            for name in sorted(set(weekly) - set(DAYS)):
                errors[f"weekly.{name}"] = ["Unknown day: the days are mon, tue, wed, thu, fri, sat, sun."]
            for day in DAYS:
                if day not in weekly:
                    errors[f"weekly.{day}"] = ["Every day is named (an empty list is closed)."]
                else:
                    _check_day(weekly[day], f"weekly.{day}", errors)
    holidays = body.get("holidays")
    if "holidays" in body:
        if not isinstance(holidays, list):
            errors["holidays"] = ["A list of dates YYYY-MM-DD."]
        elif len(holidays) > MAX_HOLIDAYS:
            errors["holidays"] = [f"At most {MAX_HOLIDAYS} dates."]
        else:
            seen = set()
            for index, value in enumerate(holidays):
                if not isinstance(value, str) or not _DATE.match(value) or not _is_date(value):
                    errors[f"holidays.{index}"] = ["A date YYYY-MM-DD."]
                elif value in seen:
                    errors[f"holidays.{index}"] = ["This date is listed twice."]
                else:
                    seen.add(value)
    if "outside_hours" in body and body["outside_hours"] not in MODES:
        errors["outside_hours"] = ["Must be offline_form, ai_only or hidden."]
    if errors:
        return {}, errors
    return {name: body[name] for name in MEMBERS}, {}


def _is_date(value: str) -> bool:
    try:
        date.fromisoformat(value)
    except ValueError:
        return False
    return True


# --- the computation ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class HoursState:
    """`open`; while closed, `opens_at` (aware, in the widget's zone) or None beyond HORIZON;
    `mode` is the `outside_hours` mode, `enabled` whether hours apply at all."""

    open: bool
    opens_at: datetime | None
    mode: str
    enabled: bool

    def opens_at_iso(self) -> str | None:
        return self.opens_at.isoformat(timespec="seconds") if self.opens_at else None

    def opens_at_short(self) -> str:
        """`HH:MM DD.MM` (the `{opens_at}` of the `outside_hours` phrase), or "" when unknown."""
        return self.opens_at.strftime("%H:%M %d.%m") if self.opens_at else ""


def _open_on(hours: dict, day: date, minute: int) -> bool:
    if day.isoformat() in hours["holidays"]:
        return False
    intervals = hours["weekly"].get(DAYS[day.weekday()]) or []
    return any(_minutes(start) <= minute < _minutes(end) for start, end in intervals)


def _wall(day: date, minute: int, zone: ZoneInfo) -> datetime:
    """The instant (in UTC) a wall clock of `zone` shows `minute` on `day`; a time skipped by a DST
    change maps to the instant of its reading with the offset before the change (`fold=0`)."""
    return datetime.combine(day, time(minute // 60, minute % 60), tzinfo=zone).astimezone(UTC)


def state_at(hours: dict, now: datetime) -> HoursState:
    """Open or closed at the aware moment `now`, and the next opening while closed."""
    mode = hours.get("outside_hours") or "offline_form"
    if not hours.get("enabled"):
        return HoursState(open=True, opens_at=None, mode=mode, enabled=False)
    zone = ZoneInfo(hours["timezone"])
    # Instants are compared in UTC: datetimes sharing one tzinfo compare and subtract as wall times.
    now = now.astimezone(UTC)
    local = now.astimezone(zone)
    today = local.date()
    if _open_on(hours, today, local.hour * 60 + local.minute):
        return HoursState(open=True, opens_at=None, mode=mode, enabled=True)
    for offset in range(HORIZON.days + 1):
        day = today + timedelta(days=offset)
        if day.isoformat() in hours["holidays"]:
            continue
        starts = sorted(_minutes(start) for start, _ in hours["weekly"].get(DAYS[day.weekday()]) or [])
        for minute in starts:
            moment = _wall(day, minute, zone)
            if moment > now:
                opens_at = moment.astimezone(zone) if moment - now <= HORIZON else None
                return HoursState(open=False, opens_at=opens_at, mode=mode, enabled=True)
    return HoursState(open=False, opens_at=None, mode=mode, enabled=True)


def _instant(day: date, minute: int, zone: ZoneInfo) -> datetime:
    """`_wall`, with `24:00` read as the next day's `00:00`."""
    if minute >= 24 * 60:
        return _wall(day + timedelta(days=1), 0, zone)
    return _wall(day, minute, zone)


def add_open_seconds(hours: dict, start: datetime, seconds: int) -> datetime:
    """The instant (UTC) when `seconds` of open time have passed since `start`: closed time (nights,
    weekends, holidays, a start while closed) does not count. The week's intervals are wall-clock
    times of the widget's zone, so a day of a DST change is an hour shorter or longer in real time.
    Hours disabled: always open (`start + seconds`); a week without any interval never opens, and
    then plain seconds count too (a clock must come due some time)."""
    start = start.astimezone(UTC)
    if not hours.get("enabled") or not any(hours["weekly"].get(day) for day in DAYS):
        return start + timedelta(seconds=seconds)
    zone = ZoneInfo(hours["timezone"])
    holidays = set(hours["holidays"])
    remaining = timedelta(seconds=seconds)
    day = start.astimezone(zone).date()
    while True:
        if day.isoformat() not in holidays:
            for begin, end in sorted(hours["weekly"].get(DAYS[day.weekday()]) or []):
                opens = max(_instant(day, _minutes(begin), zone), start)
                closes = _instant(day, _minutes(end), zone)
                if closes <= opens:
                    continue
                if remaining <= closes - opens:
                    return opens + remaining
                remaining -= closes - opens
        day += timedelta(days=1)


# --- departments (core specification: `full`, {from, to} or null per day Monday..Sunday) -----------------

_SPEC_DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


def department_open_at(schedule: dict, zone_name: str, now: datetime) -> bool:
    """A department's own week at `now`, read in the widget's time zone (`to` is exclusive)."""
    local = now.astimezone(ZoneInfo(zone_name))
    value = (schedule or {}).get(_SPEC_DAYS[local.weekday()])
    if value == "full":
        return True
    if not isinstance(value, dict):
        return False
    minute = local.hour * 60 + local.minute
    return _minutes(value["from"]) <= minute < _minutes(value["to"])
