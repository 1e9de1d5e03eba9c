"""Writes of the statistics facts. apps.stats.facts decides what a change of a chat adds or takes
away and hands it here as a `Delta`; this module owns how it is stored.

Locking: the caller holds the chat row lock (the chat services take it), so the chat's own
`ChatFacts` row has one writer at a time. Daily rollup rows are shared by every chat of a day;
`apply` upserts them with `counter = counter + delta` in one fixed order (widget rows, then agent
rows, each sorted by key), so two transactions never wait on each other's rows in a cycle, as long
as a transaction changes one chat: callers that change many chats (the SLA timer, releasing an
operator's chats) take a transaction per chat.
"""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Mapping
from datetime import date
from zoneinfo import ZoneInfo

from django.db import connection, transaction
from django.db.models import F, Subquery

from apps.chats.models import Rating

from .models import (
    AGENT_COUNTERS,
    FACT_SHARDS,
    REPORT_COUNTERS,
    REPORT_SHARDS,
    WIDGET_COUNTERS,
    AssignmentFact,
    ChatFacts,
    DailyAgentFacts,
    DailyReportFacts,
    DailyWidgetFacts,
)
from .windows import report_tz

WidgetKey = tuple[date, str, bool]  # (Moscow day, channel, is_internal)
AgentKey = tuple[int, date]  # (agent id, Moscow day)
# (report day, channel, is_internal, agent id or 0, department id or 0): models.DailyReportFacts
ReportKey = tuple[date, str, bool, int, int]


class Delta:
    """Changes of the daily counters of one widget, accumulated before they are written."""

    def __init__(self, widget_id: int, shard: int = 0):
        self.widget_id, self.shard = widget_id, shard
        self.widget: dict[WidgetKey, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        self.agent: dict[AgentKey, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        self.report: dict[ReportKey, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        self._zone: ZoneInfo | None = None

    def zone(self) -> ZoneInfo:
        """The widget's report time zone, read once per delta (windows.report_tz)."""
        if self._zone is None:
            self._zone = report_tz(widget_id=self.widget_id)
        return self._zone

    def add_report(self, key: ReportKey, counters: Mapping[str, int], sign: int = 1) -> None:
        row = self.report[key]
        for name, value in counters.items():
            if value:
                row[name] += sign * int(value)

    def report_rows(self) -> list[tuple[ReportKey, dict[str, int]]]:
        return sorted((k, dict(v)) for k, v in self.report.items() if any(v.values()))

    def add_widget(self, key: WidgetKey, counters: Mapping[str, int], sign: int = 1) -> None:
        row = self.widget[key]
        for name, value in counters.items():
            if value:
                row[name] += sign * int(value)

    def add_agent(self, key: AgentKey, counters: Mapping[str, int], sign: int = 1) -> None:
        row = self.agent[key]
        for name, value in counters.items():
            if value:
                row[name] += sign * int(value)

    def widget_rows(self) -> list[tuple[WidgetKey, dict[str, int]]]:
        return sorted((k, dict(v)) for k, v in self.widget.items() if any(v.values()))

    def agent_rows(self) -> list[tuple[AgentKey, dict[str, int]]]:
        return sorted((k, dict(v)) for k, v in self.agent.items() if any(v.values()))

    def __bool__(self) -> bool:
        return bool(self.widget_rows() or self.agent_rows() or self.report_rows())


_WIDGET_KEYS = ("widget_id", "day", "channel", "is_internal", "shard")
_AGENT_KEYS = ("widget_id", "agent_id", "day", "shard")
_REPORT_KEYS = ("widget_id", "agent_id", "day", "channel", "is_internal", "department_id", "shard")


def shard_of(chat_id: int) -> int:
    """The rollup rows a chat's changes add to (models.FACT_SHARDS)."""
    return chat_id % FACT_SHARDS


@functools.cache
def _upsert_sql(model, keys: tuple[str, ...], counters: tuple[str, ...], rows: int) -> str:
    """INSERT ... ON CONFLICT (key) DO UPDATE SET c = c + excluded.c for `rows` rows, built once per
    shape: the ORM has no spelling for an upsert that adds to a column. The same text runs on
    PostgreSQL and SQLite."""
    quote = connection.ops.quote_name
    table = model._meta.db_table
    columns = [*keys, *counters]
    one = "(" + ", ".join(["%s"] * len(columns)) + ")"
    values = ", ".join([one] * rows)
    updates = ", ".join(f"{quote(c)} = {quote(table)}.{quote(c)} + excluded.{quote(c)}" for c in counters)
    # Identifiers are our models' own column names; every value is a parameter.
    insert = f"INSERT INTO {quote(table)} ({', '.join(quote(c) for c in columns)}) "  # noqa: S608
    return f"{insert}VALUES {values} ON CONFLICT ({', '.join(quote(k) for k in keys)}) DO UPDATE SET {updates}"


def _params(rows: list[tuple[tuple, dict]], counters: tuple[str, ...]) -> list:
    params: list = []
    for key, values in rows:
        params.extend(key)
        params.extend(values.get(c, 0) for c in counters)
    return params


def _adapt_day(day: date):
    return connection.ops.adapt_datefield_value(day)


def _report_shard(delta: Delta, agent_id: int) -> int:
    """Widget rows spread over REPORT_SHARDS rows by the chat, agent rows sit on shard 0
    (DailyReportFacts)."""
    return delta.shard % REPORT_SHARDS if agent_id == 0 else 0


def apply(delta: Delta) -> None:
    """Add `delta` to the daily rollups (widget rows, then agent rows, then report rows, each
    sorted). Runs in the caller's transaction (no savepoint), or in one of its own outside any."""
    widget_rows = [
        ((delta.widget_id, _adapt_day(day), channel, internal, delta.shard), values)
        for (day, channel, internal), values in delta.widget_rows()
    ]
    agent_rows = [
        ((delta.widget_id, agent_id, _adapt_day(day), delta.shard), values)
        for (agent_id, day), values in delta.agent_rows()
    ]
    report_rows = sorted(
        (
            (delta.widget_id, agent_id, _adapt_day(day), channel, internal, department_id),
            _report_shard(delta, agent_id),
            values,
        )
        for (day, channel, internal, agent_id, department_id), values in delta.report_rows()
    )
    report_rows = [((*key, shard), values) for key, shard, values in report_rows]
    writes = [
        (_upsert_sql(model, keys, counters, len(rows)), _params(rows, counters))
        for model, keys, counters, rows in (
            (DailyWidgetFacts, _WIDGET_KEYS, WIDGET_COUNTERS, widget_rows),
            (DailyAgentFacts, _AGENT_KEYS, AGENT_COUNTERS, agent_rows),
            (DailyReportFacts, _REPORT_KEYS, REPORT_COUNTERS, report_rows),
        )
        if rows
    ]
    if not writes:
        return
    with transaction.atomic(savepoint=False), connection.cursor() as cursor:
        for sql, params in writes:
            cursor.execute(sql, params)


def save_chat_facts(facts: ChatFacts, *, created: bool, fields: tuple[str, ...]) -> None:
    """Store a new snapshot whole, or write `fields` of an existing one: the counters that
    `message_stored` and `refresh_chat_rating` keep are never written back from a copy."""
    if created:
        facts.save(force_insert=True)
    else:
        facts.save(update_fields=fields)


def message_stored(*, chat, counted: bool) -> None:
    """A message of `chat` was stored: count it when `counted`, and take the chat's closing time,
    which a message clears when it reopens the room."""
    ChatFacts.objects.filter(pk=chat.pk).update(messages=F("messages") + int(counted), closed_at=chat.closed_at)


def refresh_chat_rating(*, chat_id: int) -> None:
    """Copy the chat's latest rating (by created_at, then id) into its facts."""
    latest = Rating.objects.filter(chat_id=chat_id).order_by("-created_at", "-id").values("value")[:1]
    ChatFacts.objects.filter(pk=chat_id).update(rating=Subquery(latest))


def record_assignment_fact(fact: AssignmentFact, *, reroutes: int | None, wait_ms: int | None) -> None:
    """Store a counted change of routing owner and what the chat's facts have now counted (the
    re-routes and the wait when they changed)."""
    fact.save(force_insert=True)
    counted = {}
    if reroutes is not None:
        counted["reroutes"] = reroutes
    if wait_ms is not None:
        counted["assignment_wait_ms"] = wait_ms
    if counted:
        ChatFacts.objects.filter(pk=fact.chat_id).update(**counted)


# --- rebuild ---------------------------------------------------------------------------------------


def clear_widget_facts(*, widget_id: int) -> None:
    """Delete every fact of the widget (the rebuild recomputes them in the same transaction)."""
    ChatFacts.objects.filter(widget_id=widget_id).delete()
    DailyWidgetFacts.objects.filter(widget_id=widget_id).delete()
    DailyAgentFacts.objects.filter(widget_id=widget_id).delete()
    DailyReportFacts.objects.filter(widget_id=widget_id).delete()


def insert_chat_facts(rows: list[ChatFacts], *, batch_size: int = 5000) -> None:
    """Insert new snapshots (the rebuild's, after clear_widget_facts)."""
    ChatFacts.objects.bulk_create(rows, batch_size=batch_size)


def insert_rollups(delta: Delta, *, batch_size: int = 5000) -> None:
    """Write `delta` as fresh rows (after clear_widget_facts)."""
    DailyWidgetFacts.objects.bulk_create(
        (
            DailyWidgetFacts(widget_id=delta.widget_id, day=day, channel=channel, is_internal=internal, **values)
            for (day, channel, internal), values in delta.widget_rows()
        ),
        batch_size=batch_size,
    )
    DailyAgentFacts.objects.bulk_create(
        (
            DailyAgentFacts(widget_id=delta.widget_id, agent_id=agent_id, day=day, **values)
            for (agent_id, day), values in delta.agent_rows()
        ),
        batch_size=batch_size,
    )
    DailyReportFacts.objects.bulk_create(
        (
            DailyReportFacts(
                widget_id=delta.widget_id,
                day=day,
                channel=channel,
                is_internal=internal,
                agent_id=agent_id,
                department_id=department_id,
                **values,
            )
            for (day, channel, internal, agent_id, department_id), values in delta.report_rows()
        ),
        batch_size=batch_size,
    )
