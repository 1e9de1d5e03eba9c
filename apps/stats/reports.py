"""The owner's reports (/console/reports/): every figure of the page from the report rollups
(`DailyReportFacts`), never from a scan of chats.

Time zone. A report counts whole days of the widget's business-hours time zone when the widget
has stored business hours, else of Europe/Moscow (`report_tz`). The statistics API's
rollups are keyed by the Moscow day, and a day of another zone straddles two Moscow days, so it
cannot be cut out of them without reading that day's chats. The report rollups are therefore
keyed by the report day itself: the statistics handlers write each chat on its creation day in
the widget's zone and each rating on its own day there, in the same transaction as the change.
A chat's facts remember the report day it was counted on (`ChatFacts.report_day`), so a later
change takes it back from where it was added. When the widget's time zone changes, chats counted
before keep the days of the old zone until `manage.py rebuild_stats_facts` re-keys them.

Figures, in the words of the statistics API (apps.stats.selectors):
- chats: chats (rooms) created on the day; by channel without internal department chats, in the
  totals and the handling with them. Handling: `ai` and `human` by the type of the operator
  handling the chat now, `ai_to_human` / `human_to_ai` the chats that went through that hand-over
  (one chat may count in both and in `ai` or `human`), `missed` the chats nobody has answered.
- first response: first visible operator reply minus the visitor message that opened the
  conversation it answers (`avg_first_response_seconds`); resolution: closing minus creation of
  the chats created on the day and closed now. Median and 90th percentile by nearest rank, read
  from stored histograms (apps.stats.histogram: within 9.1% of the exact value).
- rating: the ratings given on the day, by value.
- SLA: clocks decided on the days (`GET /v1/stats/sla`, all kinds together): met when stopped
  in time, breached when they ran out; for an operator, the clocks decided while it owned the chat.
- operators: chats the operator owns (`chats_total`), accepted first (`chats_accepted`), owns
  unanswered (`chats_missed`; never for the AI operator), the first response of the chats it
  owns, the ratings it received. Departments: the chats of the department the chat is in now.

`agent_id` narrows every figure to one operator's own ("My statistics"): its chats, its ratings
and its SLA clocks.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import date, timedelta
from zoneinfo import ZoneInfo

from apps.agents.models import Agent, Department
from apps.core.models import Widget
from apps.core.timeparse import EARLIEST_DAY, LATEST_DAY

from . import histogram, windows
from .selectors import (
    RATING_VALUES,
    agents_of,
    average_rating,
    report_days,
    report_days_by_channel,
    report_departments,
    report_operators,
)

MAX_DAYS = 366
HANDLING = ("ai", "human", "ai_to_human", "human_to_ai", "missed")
_CHAT_COUNTERS = (
    "chats_total",
    "chats_missed",
    "chats_accepted",
    "chats_handled_ai",
    "chats_handled_human",
    "chats_ai_to_human",
    "chats_human_to_ai",
)
_RATINGS = tuple(f"rating_{v}" for v in RATING_VALUES)
_SLA = ("sla_met", "sla_breached")
_ALL = (*_CHAT_COUNTERS, *_RATINGS, *_SLA, *histogram.FIRST_RESPONSE, *histogram.RESOLUTION)


def report_tz(widget: Widget) -> ZoneInfo:
    """The report's time zone (windows.report_tz): business hours' when stored, else Moscow."""
    return windows.report_tz(widget_id=widget.pk)


class ReportRangeError(ValueError):
    """A range the report cannot serve; the message says why."""


def check_range(start: date, end: date) -> None:
    if end < start:
        raise ReportRangeError("The end date must not be before the start date.")
    if (end - start).days + 1 > MAX_DAYS:
        raise ReportRangeError(f"A report covers at most {MAX_DAYS} days.")
    if start < EARLIEST_DAY or end >= LATEST_DAY:
        raise ReportRangeError(f"Dates must be from {EARLIEST_DAY} to {LATEST_DAY}.")


def _add(target: dict[str, int], row: dict, columns) -> None:
    for name in columns:
        value = row.get(name)
        if value:
            target[name] = target.get(name, 0) + value


def _counts(values: dict[str, int], columns) -> list[int]:
    return [values.get(name, 0) for name in columns]


def _median(values: dict[str, int]) -> int | None:
    return histogram.percentile_ms(_counts(values, histogram.FIRST_RESPONSE), 0.5)


def _rating(values: dict[str, int]) -> tuple[float | None, int, dict[str, int]]:
    distribution = {str(v): values.get(f"rating_{v}", 0) for v in RATING_VALUES}
    count = sum(distribution.values())
    total = sum(v * distribution[str(v)] for v in RATING_VALUES)
    return average_rating(total, count), count, distribution


_AGENT_COLUMNS = (*_CHAT_COUNTERS, *_RATINGS, *histogram.FIRST_RESPONSE)
_DEPARTMENT_COLUMNS = ("chats_total", "chats_missed", *_RATINGS, *histogram.FIRST_RESPONSE)


def _operators(rows: list[dict], agents: list[Agent]) -> list[dict]:
    per_agent: dict[int, dict[str, int]] = defaultdict(dict)
    for row in rows:
        _add(per_agent[row["agent_id"]], row, _AGENT_COLUMNS)
    out = []
    for agent in agents:
        values = per_agent.get(agent.pk, {})
        average, count, _distribution = _rating(values)
        out.append(
            {
                "agent_id": agent.pk,
                "name": agent.name,
                "chats": values.get("chats_total", 0),
                "accepted": values.get("chats_accepted", 0),
                # The AI operator never owns a chat, so it never has one waiting for it.
                "missed": 0 if agent.type == Agent.Type.AI else values.get("chats_missed", 0),
                "first_response_median_ms": _median(values),
                "rating_average": average,
                "rating_count": count,
            }
        )
    return out


def build_report(*, widget: Widget, start: date, end: date, agent_id: int | None = None) -> dict:
    """Every figure of the reports page for the report days start..end (inclusive, at most
    MAX_DAYS, in `report_tz`); with `agent_id`, that operator's own figures only. Raises
    ReportRangeError for a range it cannot serve. A fixed number of statements, whatever the
    number of chats or days: ranges of the report rollups' (widget, agent, day) key."""
    check_range(start, end)
    zone = report_tz(widget)
    days = [start + timedelta(days=i) for i in range((end - start).days + 1)]
    index = {day: i for i, day in enumerate(days)}
    span = {"widget_id": widget.pk, "start": start, "end": end}

    # Reads of the same rows, each summed by the database to what it draws: per day (every counter),
    # per day and channel (chats only), per department and per operator (their tables' columns).
    per_day: list[dict[str, int]] = [{} for _ in days]
    total: dict[str, int] = {}
    for row in report_days(**span, agent_id=agent_id or 0, columns=_ALL):
        _add(per_day[index[row["day"]]], row, _ALL)
        _add(total, row, _ALL)
    by_channel: dict[str, list[int]] = defaultdict(lambda: [0] * len(days))
    for row in report_days_by_channel(**span, agent_id=agent_id or 0):
        if row["chats"]:
            by_channel[row["channel"]][index[row["day"]]] += row["chats"]
    per_department: dict[int, dict[str, int]] = defaultdict(dict)
    if agent_id is None:
        for row in report_departments(**span, columns=_DEPARTMENT_COLUMNS):
            _add(per_department[row["department_id"]], row, _DEPARTMENT_COLUMNS)

    def series(columns, q):
        return [histogram.percentile_ms(_counts(values, columns), q) for values in per_day]

    if agent_id is None:
        agents = list(agents_of(widget).order_by("name", "pk"))
        operators = _operators(report_operators(**span, agent_id=None, columns=_AGENT_COLUMNS), agents)
        departments = []
        for department in Department.objects.filter(widget=widget).order_by("name", "pk"):
            values = per_department.get(department.pk, {})
            departments.append(
                {
                    "department_id": department.pk,
                    "name": department.name,
                    "chats": values.get("chats_total", 0),
                    "missed": values.get("chats_missed", 0),
                    "first_response_median_ms": _median(values),
                    "rating_average": _rating(values)[0],
                }
            )
    else:
        rows = report_operators(**span, agent_id=agent_id, columns=_AGENT_COLUMNS)
        operators = _operators(rows, list(agents_of(widget).filter(pk=agent_id)))
        departments = []

    average, count, distribution = _rating(total)
    return {
        "days": [day.isoformat() for day in days],
        "tz": zone.key,
        "chats_by_channel": {channel: by_channel[channel] for channel in sorted(by_channel)},
        "first_response": {
            "median_ms": series(histogram.FIRST_RESPONSE, 0.5),
            "p90_ms": series(histogram.FIRST_RESPONSE, 0.9),
        },
        "resolution": {
            "median_ms": series(histogram.RESOLUTION, 0.5),
            "p90_ms": series(histogram.RESOLUTION, 0.9),
        },
        "rating": {"average": average, "count": count, "distribution": distribution},
        "handling": {
            "ai": total.get("chats_handled_ai", 0),
            "human": total.get("chats_handled_human", 0),
            "ai_to_human": total.get("chats_ai_to_human", 0),
            "human_to_ai": total.get("chats_human_to_ai", 0),
            "missed": total.get("chats_missed", 0),
        },
        "sla": {"met": total.get("sla_met", 0), "breached": total.get("sla_breached", 0)},
        "operators": operators,
        "departments": departments,
        "totals": {
            "chats": total.get("chats_total", 0),
            "missed": total.get("chats_missed", 0),
            "first_response_median_ms": _median(total),
            "first_response_p90_ms": histogram.percentile_ms(_counts(total, histogram.FIRST_RESPONSE), 0.9),
            "resolution_median_ms": histogram.percentile_ms(_counts(total, histogram.RESOLUTION), 0.5),
            "rating_average": average,
            "rating_count": count,
        },
    }
