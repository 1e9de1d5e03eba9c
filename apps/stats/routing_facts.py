"""Routing statistics facts: what a change of a chat's routing owner (chat.assigned) adds to the
daily rollups, in the change's transaction (the chat row is locked).

- `chats_routed`: assignments routing made (the queue served, a re-route), on the assignment's
  Moscow day; per agent, the ones it gave that agent.
- `chats_rerouted`: re-routes (an unanswered chat moved to the next operator), on their own day.
- Time to assignment: from the moment the chat began to wait for a person (`ChatRouting.queued_at`)
  to its first assignment after it, by anyone; counted once per chat, on the assignment's day, as a
  millisecond sum and a count (the average is their quotient).

The routing row tells what changed: `apps.routing.services.reroute` counts the re-route on it
before the owner changes, and the wait is the routing row's own `wait_seconds` when routing's
handler of the same event has run, else the time from `queued_at` to now (the same moment to the
millisecond: both run in the one transaction). The chat's facts keep what was counted
(`reroutes`, `assignment_wait_ms`), so an event seen twice adds nothing. Each counted change also
writes an `AssignmentFact` row, which a window edge inside a day and the rebuild read.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db.models import Count, Q, Sum
from django.utils import timezone

from apps.chats.models import Chat
from apps.core import events
from apps.core.timeparse import business_tz
from apps.routing.models import ChatRouting

from . import selectors as stats_selectors
from . import services as stats
from .models import AssignmentFact


def _moscow_day(moment: datetime):
    return moment.astimezone(business_tz()).date()


def assigned(*, chat: Chat, agent_id: int | None, by: str, now: datetime | None = None) -> None:
    """The (locked) chat's routing owner changed to `agent_id` (None: back to the queue) by `by`."""
    now = now or timezone.now()
    facts = stats_selectors.assignment_facts(chat_id=chat.pk)
    if facts is None:  # a chat older than its facts: the rebuild counts it
        return
    reroutes = facts["routing_reroutes"] or 0
    rerouted = max(reroutes - facts["reroutes"], 0)
    wait_ms = None
    if agent_id is not None and facts["assignment_wait_ms"] is None and facts["queued_at"] is not None:
        if facts["wait_seconds"] is not None:
            wait_ms = round(facts["wait_seconds"] * 1000)
        elif facts["queue_since"] is not None:
            wait_ms = max((now - facts["queued_at"]) // timedelta(milliseconds=1), 0)
    routed = by == ChatRouting.By.ROUTING and agent_id is not None
    if not (routed or rerouted or wait_ms is not None):
        return
    day = _moscow_day(now)
    delta = stats.Delta(chat.widget_id, stats.shard_of(chat.pk))
    _count(delta, day, chat.channel, chat.is_internal, agent_id, routed, rerouted, wait_ms)
    stats.apply(delta)
    stats.record_assignment_fact(
        AssignmentFact(
            widget_id=chat.widget_id,
            at=now,
            chat_id=chat.pk,
            channel=chat.channel,
            is_internal=chat.is_internal,
            agent_id=agent_id,
            routed=routed,
            rerouted=rerouted,
            wait_ms=wait_ms,
        ),
        reroutes=reroutes if rerouted else None,
        wait_ms=wait_ms,
    )


def _count(delta: stats.Delta, day, channel, internal, agent_id, routed, rerouted, wait_ms) -> None:
    delta.add_widget(
        (day, channel, internal),
        {
            "chats_routed": routed,
            "chats_rerouted": rerouted,
            "assignment_wait_ms_sum": wait_ms or 0,
            "assignment_wait_count": wait_ms is not None,
        },
    )
    if routed:
        delta.add_agent((agent_id, day), {"chats_routed": 1})


def on_chat_assigned(event: events.Event) -> None:
    if chat := event.obj("chat"):
        assigned(chat=chat, agent_id=event.data["agent_id"], by=event.data["by"])


def register() -> None:
    events.subscribe(events.CHAT_ASSIGNED, on_chat_assigned, phase=events.IN_TRANSACTION)


# --- reads and the rebuild ---------------------------------------------------------------------------------


def counters_between(*, widget_id: int, start: datetime, end: datetime) -> tuple[dict[str, int], dict[int, int]]:
    """The routing counters of [start, end) (a window edge inside a day) from the assignment facts
    (a range of their (widget, at) index): widget totals and agent id -> chats routed."""
    rows = AssignmentFact.objects.filter(widget_id=widget_id, at__gte=start, at__lt=end).order_by()
    totals = rows.aggregate(
        chats_routed=Count("id", filter=Q(routed=True)),
        chats_rerouted=Sum("rerouted"),
        assignment_wait_ms_sum=Sum("wait_ms"),
        assignment_wait_count=Count("wait_ms"),
    )
    agents = dict(rows.filter(routed=True).values_list("agent_id").annotate(n=Count("id")))
    return {k: v or 0 for k, v in totals.items()}, agents


def rebuild_into(delta: stats.Delta, *, widget_id: int) -> dict[int, tuple[int, int | None]]:
    """Add every assignment fact of the widget to `delta` (the rebuild); returns chat id ->
    (re-routes, wait) counted, for the chats' facts."""
    counted: dict[int, tuple[int, int | None]] = {}
    rows = AssignmentFact.objects.filter(widget_id=widget_id).order_by("at", "id")
    for fact in rows.iterator(chunk_size=20_000):
        day = _moscow_day(fact.at)
        _count(delta, day, fact.channel, fact.is_internal, fact.agent_id, fact.routed, fact.rerouted, fact.wait_ms)
        reroutes, wait = counted.get(fact.chat_id, (0, None))
        counted[fact.chat_id] = (reroutes + fact.rerouted, wait if wait is not None else fact.wait_ms)
    return counted
