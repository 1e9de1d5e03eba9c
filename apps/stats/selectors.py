"""Reads of statistics, tenant first. Whole Moscow days come from the daily facts; a window edge
that is not a midnight is counted from the per-chat facts and event rows of that partial day
(apps.stats.facts.counters_between: index range scans over at most those hours). No read scans a
widget's messages; a one-year window of whole days reads about 365 rows per channel.

Metric definitions (also in the OpenAPI descriptions):
- chats_total: chats (rooms) created in the window; chats_missed: those nobody has answered;
  chats_accepted = chats_total - chats_missed; chats_accepted_ai / _human: by the type of the
  operator who answered first; chats_handled_ai / _human: by the type of the operator handling
  it now; chats_ai_to_human / chats_human_to_ai: chats that ever went through that hand-over
  (a chat that went AI -> human -> AI counts in both).
- messages_total: public messages of the visitor, people and the AI operator sent in the window.
- avg_response_time_seconds: mean over chats created in the window that have a visible operator
  reply of (first reply - room creation); null without such chats.
- avg_first_response_seconds (opt-in): mean of (first reply - the visitor message that opened the
  conversation it answers) over the same chats, where such a message exists.
- rating_average: mean value of the ratings given in the window.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import defaultdict
from collections.abc import Iterable
from datetime import date

from django.db.models import Count, OuterRef, Subquery, Sum

from apps.agents.models import Agent
from apps.core.models import Widget
from apps.platform.statements import ModelStatement, Slot, Statement
from apps.routing.models import ChatRouting, SlaClock
from apps.stats import facts, routing_facts

from .models import AGENT_COUNTERS, WIDGET_COUNTERS, ChatFacts, DailyAgentFacts, DailyReportFacts, DailyWidgetFacts
from .windows import Window, buckets, report_tz

WIDGET_METRICS = (
    "chats_total",
    "chats_missed",
    "chats_accepted",
    "chats_accepted_ai",
    "chats_accepted_human",
    "chats_handled_ai",
    "chats_handled_human",
    "chats_ai_to_human",
    "chats_human_to_ai",
    "messages_total",
    "avg_response_time_seconds",
    "rating_average",
)
OPT_IN_METRICS = ("avg_first_response_seconds",)
TIMESERIES_METRICS = (
    "chats_total",
    "chats_missed",
    "chats_accepted",
    "chats_accepted_ai",
    "chats_accepted_human",
    "messages_total",
)
CHANNEL_METRICS = ("chats_accepted", "chats_accepted_ai", "chats_accepted_human", "chats_missed")
AGENT_METRICS = (
    "chats_total",
    "avg_response_time_seconds",
    "messages_total",
    "rating_average",
    "rating_distribution",
    "chats_accepted",
    "chats_handled",
    "chats_transferred_out",
    "chats_transferred_in",
    "chats_missed",
)
RATING_VALUES = (1, 2, 3, 4, 5)

Counters = dict[str, int]


# Every stored message brings its chat's snapshot up to date (apps.stats.facts), so this read is
# compiled once.
_CHAT_FACTS = ModelStatement(lambda: ChatFacts.objects.filter(pk=Slot("chat", ChatFacts._meta.pk)).order_by("pk")[:1])


def chat_facts(*, chat_id: int) -> ChatFacts | None:
    """The chat's snapshot; the caller holds the chat row lock."""
    found = _CHAT_FACTS.instances(chat=chat_id)
    return found[0] if found else None


# The chat's routing row as the change left it (name read -> ChatRouting field), read with its facts.
_ROUTING_READ = {
    "queued_at": "queued_at",
    "queue_since": "queue_since",
    "wait_seconds": "wait_seconds",
    "routing_reroutes": "reroutes",
}


def _assignment_facts():
    routing = ChatRouting.objects.filter(chat_id=OuterRef("chat_id"))
    return (
        ChatFacts.objects.filter(pk=Slot("chat", ChatFacts._meta.pk))
        .annotate(**{name: Subquery(routing.values(field)[:1]) for name, field in _ROUTING_READ.items()})
        .values("reroutes", "assignment_wait_ms", *_ROUTING_READ)
        .order_by("pk")[:1]
    )


# Every change of a chat's routing owner reads this (apps.stats.routing_facts.assigned): compiled once.
_ASSIGNMENT_FACTS = Statement(_assignment_facts)


def assignment_facts(*, chat_id: int) -> dict | None:
    """The chat's counted routing facts (`reroutes`, `assignment_wait_ms`) and its routing row as
    it stands (`queued_at`, `queue_since`, `wait_seconds`, `routing_reroutes`); None for a chat
    older than its facts."""
    found = _ASSIGNMENT_FACTS.rows(chat=chat_id)
    return found[0] if found else None


def average_seconds(total_ms: int, count: int) -> float | None:
    """Mean of a millisecond sum in seconds, to the millisecond; None for no samples."""
    return round(total_ms / count / 1000, 3) if count else None


def average_rating(total: int, count: int) -> float | None:
    return round(total / count, 2) if count else None


def _sums(counters: Iterable[str]) -> dict:
    return {name: Sum(name) for name in counters}


def _add(target: Counters, values: dict) -> None:
    for name, value in values.items():
        if value:
            target[name] = target.get(name, 0) + int(value)


def get_report_tz(*, widget: Widget):
    """The time zone of the widget's reports (and of the console's drill-down dates): its
    business-hours time zone when it has stored business hours, else Europe/Moscow."""
    return report_tz(widget_id=widget.pk)


# --- widget -----------------------------------------------------------------------------------------


def _whole_days(widget: Widget, window: Window):
    whole, pieces = window.split()
    rows = DailyWidgetFacts.objects.none()
    if whole is not None:
        rows = DailyWidgetFacts.objects.filter(widget=widget, day__gte=whole[0], day__lt=whole[1])
    partial = [facts.counters_between(widget_id=widget.pk, start=a, end=b) for a, b in pieces]
    return rows.order_by(), partial


def get_widget_counters(*, widget: Widget, window: Window) -> Counters:
    rows, partial = _whole_days(widget, window)
    total: Counters = {}
    _add(total, rows.aggregate(**_sums(WIDGET_COUNTERS)))
    for delta in partial:
        for _key, values in delta.widget_rows():
            _add(total, values)
    return total


def get_channel_counters(*, widget: Widget, window: Window) -> dict[str, Counters]:
    """channel -> counters of its chats, internal department chats left out."""
    rows, partial = _whole_days(widget, window)
    per_channel: dict[str, Counters] = defaultdict(dict)
    for row in rows.filter(is_internal=False).values("channel").annotate(**_sums(WIDGET_COUNTERS)):
        _add(per_channel[row.pop("channel")], row)
    for delta in partial:
        for (_day, channel, internal), values in delta.widget_rows():
            if not internal:
                _add(per_channel[channel], values)
    return dict(per_channel)


def get_daily_counters(*, widget: Widget, window: Window) -> dict[date, Counters]:
    rows, partial = _whole_days(widget, window)
    per_day: dict[date, Counters] = defaultdict(dict)
    for row in rows.values("day").annotate(**_sums(WIDGET_COUNTERS)):
        _add(per_day[row.pop("day")], row)
    for delta in partial:
        for (day, _channel, _internal), values in delta.widget_rows():
            _add(per_day[day], values)
    return dict(per_day)


def widget_metrics(counters: Counters) -> dict:
    c = defaultdict(int, counters)
    return {
        "chats_total": c["chats_total"],
        "chats_missed": c["chats_missed"],
        "chats_accepted": c["chats_total"] - c["chats_missed"],
        "chats_accepted_ai": c["chats_accepted_ai"],
        "chats_accepted_human": c["chats_accepted_human"],
        "chats_handled_ai": c["chats_handled_ai"],
        "chats_handled_human": c["chats_handled_human"],
        "chats_ai_to_human": c["chats_ai_to_human"],
        "chats_human_to_ai": c["chats_human_to_ai"],
        "messages_total": c["messages_total"],
        "avg_response_time_seconds": average_seconds(c["response_ms_sum"], c["response_count"]),
        "rating_average": average_rating(c["rating_sum"], c["rating_count"]),
        "avg_first_response_seconds": average_seconds(c["first_response_ms_sum"], c["first_response_count"]),
    }


def get_widget_stats(*, widget: Widget, window: Window, metrics: Iterable[str]) -> dict:
    values = widget_metrics(get_widget_counters(widget=widget, window=window))
    return {name: values[name] for name in metrics}


def list_channel_stats(*, widget: Widget, window: Window) -> list[dict]:
    """Channels with chats in the window, by channel code; internal department chats excluded."""
    out = []
    for channel, counters in sorted(get_channel_counters(widget=widget, window=window).items()):
        if not counters.get("chats_total"):
            continue
        values = widget_metrics(counters)
        out.append({"channel": channel, **{name: values[name] for name in CHANNEL_METRICS}})
    return out


def list_buckets(*, widget: Widget, window: Window, interval: str, metrics: Iterable[str]) -> list[dict]:
    """Dense, zero-filled calendar buckets (the caller has checked their number)."""
    metrics = list(metrics)
    spans = list(buckets(window, interval))
    starts = [first_day for _start, _end, first_day, _following in spans]
    per_bucket: list[Counters] = [{} for _ in spans]
    for day, values in get_daily_counters(widget=widget, window=window).items():
        _add(per_bucket[bisect_right(starts, day) - 1], values)
    out = []
    for (start, end, _first, _following), counters in zip(spans, per_bucket, strict=True):
        values = widget_metrics(counters)
        out.append({"from": start, "to": end, "metrics": {name: values[name] for name in metrics}})
    return out


# --- agents ---------------------------------------------------------------------------------------------


def get_agent_counters(*, widget: Widget, window: Window, agent_ids: list[int]) -> dict[int, Counters]:
    whole, pieces = window.split()
    per_agent: dict[int, Counters] = {agent_id: {} for agent_id in agent_ids}
    if not agent_ids:
        return per_agent
    if whole is not None:
        rows = DailyAgentFacts.objects.filter(
            widget=widget, agent_id__in=agent_ids, day__gte=whole[0], day__lt=whole[1]
        ).order_by()
        for row in rows.values("agent_id").annotate(**_sums(AGENT_COUNTERS)):
            _add(per_agent[row.pop("agent_id")], row)
    for a, b in pieces:
        delta = facts.counters_between(widget_id=widget.pk, start=a, end=b, agents=True, agent_ids=agent_ids)
        for (agent_id, _day), values in delta.agent_rows():
            _add(per_agent[agent_id], values)
    return per_agent


def agent_metrics(counters: Counters, *, agent_type: str) -> dict:
    c = defaultdict(int, counters)
    distribution = {str(v): c[f"rating_{v}"] for v in RATING_VALUES}
    rated = sum(distribution.values())
    return {
        "chats_total": c["chats_total"],
        "avg_response_time_seconds": average_seconds(c["response_ms_sum"], c["response_count"]),
        "messages_total": c["messages_total"],
        "rating_average": average_rating(sum(v * c[f"rating_{v}"] for v in RATING_VALUES), rated),
        "rating_distribution": distribution,
        "chats_accepted": c["chats_accepted"],
        "chats_handled": c["chats_handled"],
        "chats_transferred_out": c["transferred_out"],
        "chats_transferred_in": c["transferred_in"],
        # The AI operator never owns a chat, so it never has one waiting for it.
        "chats_missed": 0 if agent_type == Agent.Type.AI else c["chats_missed"],
    }


def agent_rows(*, widget: Widget, window: Window, agents: list[Agent], metrics: Iterable[str]) -> list[dict]:
    """One row per agent, in the given order, zero-filled (null for an undefined average)."""
    metrics = list(metrics)
    counters = get_agent_counters(widget=widget, window=window, agent_ids=[a.pk for a in agents])
    rows = []
    for agent in agents:
        values = agent_metrics(counters[agent.pk], agent_type=agent.type)
        rows.append(
            {
                "agent_id": agent.pk,
                "name": agent.name,
                "type": agent.type,
                "metrics": {name: values[name] for name in metrics},
            }
        )
    return rows


def agents_of(widget: Widget):
    """Every agent of the widget (any type and status, banned included: they keep their history)."""
    return Agent.objects.filter(widget=widget)


# --- routing ----------------------------------------------------------------------------------------------

ROUTING_WIDGET_COUNTERS = ("chats_routed", "chats_rerouted", "assignment_wait_ms_sum", "assignment_wait_count")


def routing_stats(*, widget: Widget, window: Window) -> dict:
    """Routing figures of the window (apps.stats.routing_facts): assignments routing made, re-routes,
    the average time from queueing to the first assignment, and per agent the chats routing gave
    them (agents with at least one, by id). Whole days from the rollups, a partial day from the
    assignment facts."""
    whole, pieces = window.split()
    totals: Counters = {}
    per_agent: dict[int, int] = defaultdict(int)
    if whole is not None:
        days = {"widget": widget, "day__gte": whole[0], "day__lt": whole[1]}
        _add(totals, DailyWidgetFacts.objects.filter(**days).order_by().aggregate(**_sums(ROUTING_WIDGET_COUNTERS)))
        agent_rows = (
            DailyAgentFacts.objects.filter(**days, chats_routed__gt=0)
            .order_by()
            .values("agent_id")
            .annotate(n=Sum("chats_routed"))
        )
        for row in agent_rows:
            per_agent[row["agent_id"]] += row["n"]
    for start, end in pieces:
        piece, agents = routing_facts.counters_between(widget_id=widget.pk, start=start, end=end)
        _add(totals, piece)
        for agent_id, n in agents.items():
            per_agent[agent_id] += n
    c = defaultdict(int, totals)
    return {
        "chats_routed": c["chats_routed"],
        "chats_rerouted": c["chats_rerouted"],
        "time_to_assignment": {
            "average_seconds": average_seconds(c["assignment_wait_ms_sum"], c["assignment_wait_count"]),
            "count": c["assignment_wait_count"],
        },
        "agents": [{"agent_id": agent_id, "chats_routed": n} for agent_id, n in sorted(per_agent.items()) if n],
    }


# --- SLA clocks (apps.routing) ----------------------------------------------------------------------------


def sla_stats(*, widget: Widget, window: Window) -> dict:
    """GET /v1/stats/sla: clocks decided in the window, met by when they stopped, breached by when they
    ran out, per kind in total and per agent (the chat's routing owner when the clock was decided;
    clocks decided with nobody assigned count in the total only). Two statements, each a range of a
    partial index (`sla_clock_met`, `sla_clock_breached`), whatever the widget's number of chats."""
    kinds = SlaClock.Kind.values

    def empty() -> dict:
        return {kind: {"met": 0, "breached": 0} for kind in kinds}

    total, agents = empty(), defaultdict(empty)
    decided = (
        (
            "met",
            SlaClock.objects.filter(widget=widget, met=True, stopped_at__gte=window.start, stopped_at__lt=window.end),
        ),
        (
            "breached",
            SlaClock.objects.filter(
                widget=widget, breached_at__isnull=False, breached_at__gte=window.start, breached_at__lt=window.end
            ),
        ),
    )
    for outcome, rows in decided:
        for agent_id, kind, n in rows.values_list("agent_id", "kind").annotate(n=Count("id")).order_by():
            total[kind][outcome] += n
            if agent_id is not None:
                agents[agent_id][kind][outcome] += n
    return {
        "total": total,
        "agents": [{"agent_id": agent_id, **agents[agent_id]} for agent_id in sorted(agents)],
    }


# The reports page's reads (apps.stats.reports.build_report): ranges of the report rollups' (widget,
# agent, day) key, summed by the database to what the page draws. A read sums up to some two hundred
# columns (`columns`, the statement's shape): compiled once, not built and compiled by the ORM on
# every load of the page.


def _report_rows(*, scoped: bool):
    """The rollups of the widget's days start..end: with `scoped`, one agent's rows (agent 0: the
    widget's own rows); without, every operator's."""
    meta = DailyReportFacts._meta
    rows = DailyReportFacts.objects.filter(
        widget_id=Slot("widget", Widget._meta.pk),
        day__gte=Slot("start", meta.get_field("day")),
        day__lte=Slot("end", meta.get_field("day")),
    ).order_by()
    if scoped:
        return rows.filter(agent_id=Slot("agent", meta.get_field("agent_id")))
    return rows.filter(agent_id__gt=0)


_REPORT_DAYS = Statement(lambda columns: _report_rows(scoped=True).values("day").annotate(**_sums(columns)))
_REPORT_DAYS_BY_CHANNEL = Statement(
    lambda: (
        _report_rows(scoped=True).filter(is_internal=False).values("day", "channel").annotate(chats=Sum("chats_total"))
    )
)
_REPORT_DEPARTMENTS = Statement(
    lambda columns: (
        _report_rows(scoped=True).exclude(department_id=0).values("department_id").annotate(**_sums(columns))
    )
)
_REPORT_OPERATORS = Statement(
    lambda columns, scoped: _report_rows(scoped=scoped).values("agent_id").annotate(**_sums(columns))
)


def report_days(*, widget_id: int, start: date, end: date, agent_id: int, columns: tuple[str, ...]) -> list[dict]:
    """Per report day: `columns` summed over one agent's rows (0: the widget's)."""
    return _REPORT_DAYS.rows((columns,), widget=widget_id, start=start, end=end, agent=agent_id)


def report_days_by_channel(*, widget_id: int, start: date, end: date, agent_id: int) -> list[dict]:
    """Per report day and channel: the chats (`chats`) of one agent's rows (0: the widget's),
    internal department chats left out."""
    return _REPORT_DAYS_BY_CHANNEL.rows(widget=widget_id, start=start, end=end, agent=agent_id)


def report_departments(*, widget_id: int, start: date, end: date, columns: tuple[str, ...]) -> list[dict]:
    """Per department: `columns` summed over the widget's rows."""
    return _REPORT_DEPARTMENTS.rows((columns,), widget=widget_id, start=start, end=end, agent=0)


def report_operators(
    *, widget_id: int, start: date, end: date, agent_id: int | None, columns: tuple[str, ...]
) -> list[dict]:
    """Per operator: `columns` summed over each operator's rows, or over one operator's (`agent_id`)."""
    if agent_id is None:
        return _REPORT_OPERATORS.rows((columns, False), widget=widget_id, start=start, end=end)
    return _REPORT_OPERATORS.rows((columns, True), widget=widget_id, start=start, end=end, agent=agent_id)
