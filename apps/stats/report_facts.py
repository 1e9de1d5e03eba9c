"""Statistics facts of the owner's reports (models.DailyReportFacts): what a chat's snapshot, an SLA
decision and the rebuild add to the report rollups, on report days (the widget's report time zone,
`services.Delta.zone`). apps.stats.facts calls `contribute` for every snapshot change and the rebuild;
the SLA handler is registered by StatsConfig.ready().
"""

from __future__ import annotations

from datetime import datetime, timedelta
from types import SimpleNamespace

from django.db.models import Q

from apps.chats.models import Chat
from apps.core import events
from apps.routing.models import SlaClock

from . import histogram
from . import services as stats
from .models import ChatFacts


def _whole_ms(span: timedelta) -> int:
    """Whole milliseconds, rounded down (as facts.whole_ms: the unit of every duration)."""
    return span // timedelta(milliseconds=1)


def contribute(delta: stats.Delta, facts: ChatFacts, sign: int) -> None:
    """The chat's counters of the reports (models.DailyReportFacts), on its report day: the widget
    row of its channel and department, its owner's row and its accepting operator's row."""
    handling = facts.handling
    resolution_ms = _whole_ms(facts.closed_at - facts.created_at) if facts.closed_at else None
    chat = {
        "chats_total": 1,
        "chats_missed": handling == Chat.Handling.MISSED,
        "chats_accepted": handling != Chat.Handling.MISSED,
        "chats_handled_ai": facts.handled_type == Chat.OperatorType.AI,
        "chats_handled_human": facts.handled_type == Chat.OperatorType.HUMAN,
        "chats_ai_to_human": facts.went_ai_to_human,
        "chats_human_to_ai": facts.went_human_to_ai,
        **histogram.one(histogram.FIRST_RESPONSE, facts.first_response_ms),
        **histogram.one(histogram.RESOLUTION, resolution_ms),
    }
    where = (facts.report_day, facts.channel, facts.is_internal)
    delta.add_report((*where, 0, facts.department_id or 0), chat, sign)
    if facts.owner_agent_id is not None:
        delta.add_report((*where, facts.owner_agent_id, 0), {**chat, "chats_accepted": 0}, sign)
    if facts.accepted_agent_id is not None:
        delta.add_report((*where, facts.accepted_agent_id, 0), {"chats_accepted": 1}, sign)


def count_sla(delta: stats.Delta, chat, *, at: datetime, agent_id: int | None, met: bool) -> None:
    """An SLA clock of `chat` decided at `at` (met, else breached), for the reports only."""
    column = "sla_met" if met else "sla_breached"
    where = (at.astimezone(delta.zone()).date(), chat.channel, chat.is_internal)
    delta.add_report((*where, 0, chat.department_id or 0), {column: 1})
    if agent_id is not None:
        delta.add_report((*where, agent_id, 0), {column: 1})


def on_sla_decided(event: events.Event) -> None:
    """sla.met (routing stopped a clock in time) and sla.breached (a clock ran out): once per clock,
    both emitted by the conditional update that decided it."""
    clock = event.obj("clock")
    if clock is None:
        return
    chat = event.obj("chat") or clock.chat
    met = event.type == events.SLA_MET
    delta = stats.Delta(chat.widget_id, stats.shard_of(chat.pk))
    count_sla(delta, chat, at=clock.stopped_at if met else clock.breached_at, agent_id=clock.agent_id, met=met)
    stats.apply(delta)


def register() -> None:
    events.subscribe([events.SLA_MET, events.SLA_BREACHED], on_sla_decided, phase=events.IN_TRANSACTION)


def rebuild_sla_into(delta: stats.Delta, *, widget_id: int) -> None:
    """Add every decided SLA clock of the widget to `delta` (the rebuild)."""
    decided = SlaClock.objects.filter(widget_id=widget_id).filter(Q(met=True) | Q(breached_at__isnull=False))
    columns = ("met", "stopped_at", "breached_at", "agent_id", "chat__channel", "chat__is_internal")
    rows = decided.values_list(*columns, "chat__department_id").iterator(chunk_size=20_000)
    for met, stopped_at, breached_at, agent_id, channel, internal, department_id in rows:
        chat = SimpleNamespace(channel=channel, is_internal=internal, department_id=department_id)
        count_sla(delta, chat, at=stopped_at if met else breached_at, agent_id=agent_id, met=bool(met))
