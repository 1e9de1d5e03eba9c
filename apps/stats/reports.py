"""The owner's reports (/console/reports/): every figure of the page from the statistics rollups.

First version: whole Europe/Moscow days of the daily facts; percentiles are not stored yet (None).
"""

from __future__ import annotations

from collections import defaultdict
from datetime import date, timedelta
from zoneinfo import ZoneInfo

from apps.agents.models import Department
from apps.core.models import Widget
from apps.core.timeparse import business_tz
from apps.widget.models import BusinessHours

from . import selectors
from .models import DailyWidgetFacts
from .windows import Window, midnight

MAX_DAYS = 366
HANDLING = ("ai", "human", "ai_to_human", "human_to_ai", "missed")


class ReportRangeError(ValueError):
    """A range the report cannot serve."""


def report_tz(widget: Widget) -> ZoneInfo:
    """The widget's business-hours time zone when it has stored hours, else Europe/Moscow."""
    hours = BusinessHours.objects.filter(widget=widget).values_list("hours", flat=True).first()
    name = (hours or {}).get("timezone")
    return ZoneInfo(name) if name else business_tz()


def build_report(*, widget: Widget, start: date, end: date, agent_id: int | None = None) -> dict:
    if end < start:
        raise ReportRangeError("The end must not be before the start.")
    if (end - start).days + 1 > MAX_DAYS:
        raise ReportRangeError(f"At most {MAX_DAYS} days.")
    days = [start + timedelta(days=i) for i in range((end - start).days + 1)]
    index = {day: i for i, day in enumerate(days)}
    window = Window(midnight(start), midnight(end + timedelta(days=1)))
    rows = DailyWidgetFacts.objects.filter(widget=widget, day__gte=start, day__lte=end, is_internal=False)
    by_channel: dict[str, list[int]] = defaultdict(lambda: [0] * len(days))
    for row in rows.order_by().values("day", "channel").annotate(**selectors._sums(["chats_total"])):
        by_channel[row["channel"]][index[row["day"]]] += row["chats_total"] or 0
    counters = selectors.get_widget_counters(widget=widget, window=window)
    metrics = selectors.widget_metrics(counters)
    agents = list(selectors.agents_of(widget).order_by("name", "pk"))
    if agent_id is not None:
        agents = [a for a in agents if a.pk == agent_id]
    agent_counters = selectors.get_agent_counters(widget=widget, window=window, agent_ids=[a.pk for a in agents])
    operators = []
    distribution = {str(v): 0 for v in selectors.RATING_VALUES}
    for agent in agents:
        values = selectors.agent_metrics(agent_counters[agent.pk], agent_type=agent.type)
        for key, n in values["rating_distribution"].items():
            distribution[key] += n
        operators.append(
            {
                "agent_id": agent.pk,
                "name": agent.name,
                "chats": values["chats_total"],
                "accepted": values["chats_accepted"],
                "missed": values["chats_missed"],
                "first_response_median_ms": None,
                "rating_average": values["rating_average"],
                "rating_count": sum(values["rating_distribution"].values()),
            }
        )
    rated = sum(distribution.values())
    sla = selectors.sla_stats(widget=widget, window=window)["total"]
    departments = [
        {
            "department_id": d.pk,
            "name": d.name,
            "chats": 0,
            "missed": 0,
            "first_response_median_ms": None,
            "rating_average": None,
        }
        for d in Department.objects.filter(widget=widget).order_by("name", "pk")
    ]
    none_per_day = [None] * len(days)
    return {
        "days": [day.isoformat() for day in days],
        "tz": business_tz().key,
        "chats_by_channel": dict(sorted(by_channel.items())),
        "first_response": {"median_ms": list(none_per_day), "p90_ms": list(none_per_day)},
        "resolution": {"median_ms": list(none_per_day), "p90_ms": list(none_per_day)},
        "rating": {
            "average": metrics["rating_average"],
            "count": counters.get("rating_count", 0),
            "distribution": distribution if rated else {str(v): 0 for v in selectors.RATING_VALUES},
        },
        "handling": {
            "ai": metrics["chats_handled_ai"],
            "human": metrics["chats_handled_human"],
            "ai_to_human": metrics["chats_ai_to_human"],
            "human_to_ai": metrics["chats_human_to_ai"],
            "missed": metrics["chats_missed"],
        },
        "sla": {
            "met": sum(v["met"] for v in sla.values()),
            "breached": sum(v["breached"] for v in sla.values()),
        },
        "operators": operators,
        "departments": departments,
        "totals": {
            "chats": metrics["chats_total"],
            "missed": metrics["chats_missed"],
            "first_response_median_ms": None,
            "rating_average": metrics["rating_average"],
        },
    }
