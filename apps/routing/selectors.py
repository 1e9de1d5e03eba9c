"""Reads of routing: the settings, who is eligible for a chat, the queue and a chat's place in it,
and the routing read of a chat."""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from datetime import datetime

from django.db.models import Count, F, IntegerField, OuterRef, Q, Subquery
from django.db.models.functions import Coalesce, NullIf
from django.utils import timezone

from apps.agents import selectors as agent_selectors
from apps.agents.models import Agent, Department
from apps.chats.models import Chat
from apps.chats.services import WIDGET_CHANNEL
from apps.core.models import Widget
from apps.platform.statements import AnyOf, Ids, ModelStatement, Slot, Statement
from apps.widget import selectors as widget_selectors

from .models import ChatRouting, RoutingSettings

# The estimated wait: the median wait of the widget's latest assignments, with at least this many.
WAIT_SAMPLE = 50
WAIT_MIN_SAMPLE = 5
# A department's `channels` name the widget's own chats `smb`; messenger chats by their provider code.
DEPARTMENT_CHANNEL = {WIDGET_CHANNEL: "smb"}


def routing_settings(widget: Widget) -> RoutingSettings:
    """The widget's settings (the defaults, unsaved, before the first PUT)."""
    row = RoutingSettings.objects.filter(widget=widget).first()
    return row if row is not None else RoutingSettings(widget=widget)


_LOCKED_SETTINGS = ModelStatement(
    lambda: RoutingSettings.objects.select_for_update().filter(widget_id=Slot("widget", Widget._meta.pk))
)


def locked_settings(widget: Widget) -> RoutingSettings | None:
    """The widget's settings row, locked until the transaction ends (what every decision of the
    widget holds), or None before the first one is written."""
    found = _LOCKED_SETTINGS.instances(widget=widget.pk)
    return found[0] if found else None


# How long a process trusts its cached copy of the settings (a PUT purges it at once).
SETTINGS_TTL = 300


def cached_settings(widget: Widget) -> dict:
    """The settings as `settings_payload` shows them, read with the widget config's cache: the
    visitor message path asks for the mode on every message (a PUT emits widget.config_changed,
    which purges it). Decisions read the locked row instead."""
    return widget_selectors.cached_for_config(
        widget=widget, name="routing", build=lambda: settings_payload(routing_settings(widget)), ttl=SETTINGS_TTL
    )


def settings_payload(row: RoutingSettings) -> dict:
    return {
        "mode": row.mode,
        "default_capacity": row.default_capacity,
        "reroute_after_seconds": row.reroute_after_seconds,
        "show_queue_position": row.show_queue_position,
    }


def department_channel(chat_channel: str) -> str:
    return DEPARTMENT_CHANNEL.get(chat_channel, chat_channel)


@dataclass
class Candidate:
    """An operator routing may give a chat to now: online, active, below capacity."""

    agent_id: int
    load: int
    capacity: int
    last_assigned_at: datetime | None
    departments: frozenset[int]

    @property
    def free(self) -> int:
        return self.capacity - self.load


@dataclass
class Pool:
    """Who routing may choose from for a widget at one moment, and which departments serve which
    channel. `candidates` holds every online active human with a free slot."""

    candidates: list[Candidate]
    # department channel code -> ids of the open departments listing it; a code no department lists
    # is absent (any candidate serves it).
    open_departments: dict[str, set[int]]
    listed_channels: frozenset[str]

    def eligible(self, chat_channel: str, *, exclude=()) -> list[Candidate]:
        code = department_channel(chat_channel)
        excluded = set(exclude)
        rows = [c for c in self.candidates if c.free > 0 and c.agent_id not in excluded]
        if code in self.listed_channels:
            serving = self.open_departments.get(code, set())
            rows = [c for c in rows if c.departments & serving]
        return rows


def _pool_agents():
    """Each online active human with a free slot: their open chats (COUNT(*): the partial index
    chat_widget_agent_open answers it) below their capacity (their own, else the widget's default),
    and their last automatic assignment."""
    widget = Slot("widget", Widget._meta.pk)
    open_chats = (
        Chat.objects.filter(widget_id=widget, agent_id=OuterRef("pk"), status=Chat.Status.ACTIVE)
        .order_by()
        .values("agent_id")
        .annotate(n=Count("*"))
        .values("n")
    )
    return (
        Agent.objects.filter(
            AnyOf(F("pk"), Slot("online", Ids())),
            widget_id=widget,
            type=Agent.Type.HUMAN,
            status=Agent.Status.ACTIVE,
        )
        .annotate(
            load=Coalesce(Subquery(open_chats), 0),
            slots=Coalesce(NullIf(F("capacity"), 0), Slot("default_capacity", IntegerField())),
        )
        .filter(load__lt=F("slots"))
        .values_list("pk", "slots", "load", "routing__last_assigned_at")
    )


_POOL_AGENTS = Statement(_pool_agents)
_DEPARTMENTS = Statement(
    lambda: Department.objects.filter(widget_id=Slot("widget", Widget._meta.pk)).values_list(
        "pk", "channels", "schedule"
    )
)


def pool(widget: Widget, settings: RoutingSettings, *, now: datetime | None = None) -> Pool:
    """The operators routing may choose from now (a few statements, whatever the queue's length):
    outside the widget's business hours nobody is eligible."""
    now = now or timezone.now()
    empty = Pool(candidates=[], open_departments={}, listed_channels=frozenset())
    if not widget_selectors.business_hours_state(widget, now=now).open:
        return empty
    online = agent_selectors.online_agent_ids(widget)
    if not online:
        return empty
    # The full ones never leave the database: with every operator busy but one, the decision reads
    # one row, not one per operator online.
    agents = _POOL_AGENTS.tuples(widget=widget.pk, online=online, default_capacity=settings.default_capacity)
    if not agents:
        return empty
    ids = [row[0] for row in agents]
    memberships: dict[int, set[int]] = {}
    listed: set[str] = set()
    open_departments: dict[str, set[int]] = {}
    departments = _DEPARTMENTS.tuples(widget=widget.pk)
    if departments:
        for department_id, agent_id in Department.agents.through.objects.filter(
            department__widget=widget, agent_id__in=ids
        ).values_list("department_id", "agent_id"):
            memberships.setdefault(agent_id, set()).add(department_id)
        for department_id, channels, schedule in departments:
            is_open = widget_selectors.department_schedule_open(schedule, widget=widget, now=now)
            for code in channels or []:
                listed.add(code)
                if is_open:
                    open_departments.setdefault(code, set()).add(department_id)
    candidates = [
        Candidate(
            agent_id=pk,
            load=load,
            capacity=capacity,
            last_assigned_at=last_assigned_at,
            departments=frozenset(memberships.get(pk, ())),
        )
        for pk, capacity, load, last_assigned_at in agents
    ]
    return Pool(candidates=candidates, open_departments=open_departments, listed_channels=frozenset(listed))


_EPOCH = datetime.min.replace(tzinfo=timezone.get_current_timezone())


def choose(mode: str, eligible: list[Candidate]) -> Candidate | None:
    """`round_robin`: the one assigned longest ago (never assigned first); `least_busy`: fewest open
    chats, ties the one assigned longest ago. Ties after that go to the lower agent id."""
    if not eligible:
        return None

    def since(c: Candidate) -> datetime:
        return c.last_assigned_at or _EPOCH

    if mode == RoutingSettings.Mode.LEAST_BUSY:
        return min(eligible, key=lambda c: (c.load, since(c), c.agent_id))
    return min(eligible, key=lambda c: (since(c), c.agent_id))


# --- the queue ------------------------------------------------------------------------------------------


def queue(widget: Widget | int, *, limit: int | None = None) -> list[tuple[int, datetime]]:
    """(chat id, queue_since) of the chats waiting for a person, first served first."""
    widget_id = widget if isinstance(widget, int) else widget.pk
    rows = (
        ChatRouting.objects.filter(widget_id=widget_id, queue_since__isnull=False)
        .order_by("queue_since", "chat_id")
        .values_list("chat_id", "queue_since")
    )
    return list(rows[:limit] if limit else rows)


def queue_head(widget: Widget, *, limit: int) -> list[tuple[int, str, list[int]]]:
    """(chat id, channel, operators who timed out on it) of the first `limit` chats of the queue,
    in order: what one decision needs, in one statement."""
    return _QUEUE_HEAD.tuples((limit,), widget=widget.pk)


_QUEUE_HEAD = Statement(
    lambda limit: (
        ChatRouting.objects.filter(widget_id=Slot("widget", Widget._meta.pk), queue_since__isnull=False)
        .order_by("queue_since", "chat_id")
        .values_list("chat_id", "chat__channel", "timed_out")[:limit]
    )
)


# Every freed slot asks this first (services.serve): compiled once.
_ANYONE_QUEUED = Statement(
    lambda: ChatRouting.objects.filter(widget_id=Slot("widget", Widget._meta.pk), queue_since__isnull=False).values(
        "chat_id"
    )[:1]
)


def anyone_queued(widget: Widget) -> bool:
    """Whether a chat of the widget waits in its queue."""
    return bool(_ANYONE_QUEUED.tuples(widget=widget.pk))


def queued_widget_ids() -> list[int]:
    """Widgets with someone in the queue (the beat job's pass)."""
    return list(ChatRouting.objects.filter(queue_since__isnull=False).values_list("widget_id", flat=True).distinct())


def estimated_wait_per_place(widget: Widget | int) -> float | None:
    """The median seconds from queueing to assignment of the widget's last WAIT_SAMPLE assigned chats
    that waited (null with fewer than WAIT_MIN_SAMPLE)."""
    widget_id = widget if isinstance(widget, int) else widget.pk
    waits = list(
        ChatRouting.objects.filter(widget_id=widget_id, wait_seconds__isnull=False)
        .order_by("-assigned_at")
        .values_list("wait_seconds", flat=True)[:WAIT_SAMPLE]
    )
    if len(waits) < WAIT_MIN_SAMPLE:
        return None
    return float(statistics.median(waits))


def queue_position(chat: Chat) -> tuple[int | None, int | None]:
    """(position, estimated_wait_seconds) of the chat: both None when it is not queued (1 is the next
    to be served)."""
    row = ChatRouting.objects.filter(chat_id=chat.pk).values_list("queue_since", flat=True).first()
    if row is None:
        return None, None
    ahead = (
        ChatRouting.objects.filter(widget_id=chat.widget_id, queue_since__isnull=False)
        .filter(Q(queue_since__lt=row) | Q(queue_since=row, chat_id__lt=chat.pk))
        .count()
    )
    position = ahead + 1
    per_place = estimated_wait_per_place(chat.widget_id)
    return position, (round(position * per_place) if per_place is not None else None)


# Every assignment reads the chat's row (apps.routing.services.record_assignment): compiled once.
_CHAT_ROUTING = ModelStatement(
    lambda: ChatRouting.objects.filter(chat_id=Slot("chat", ChatRouting._meta.pk)).order_by("pk")[:1]
)


def chat_routing(chat: Chat) -> ChatRouting | None:
    found = _CHAT_ROUTING.instances(chat=chat.pk)
    return found[0] if found else None


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def sla_payload(chat: Chat) -> dict | None:
    """The chat's SLA clocks as the routing read shows them: the running clocks' due times and every
    breach; null when no policy ever started a clock on it (one statement)."""
    from .models import SlaClock

    clocks = list(SlaClock.objects.filter(chat_id=chat.pk).order_by("started_at", "id"))
    if not clocks:
        return None
    due = {kind: None for kind in SlaClock.Kind.values}
    for clock in clocks:
        if clock.stopped_at is None:
            due[clock.kind] = clock.due_at
    return {
        "policy_id": clocks[-1].policy_id,
        "first_response_due_at": _iso(due[SlaClock.Kind.FIRST_RESPONSE]),
        "next_response_due_at": _iso(due[SlaClock.Kind.NEXT_RESPONSE]),
        "resolution_due_at": _iso(due[SlaClock.Kind.RESOLUTION]),
        "breaches": [
            {"kind": c.kind, "due_at": _iso(c.due_at), "at": _iso(c.breached_at)} for c in clocks if c.breached_at
        ],
    }


def policy_payload(row) -> dict:
    """An SLA policy as the API shows it."""
    return {
        "id": row.pk,
        "name": row.name,
        "department_id": row.department_id,
        "first_response_seconds": row.first_response_seconds,
        "next_response_seconds": row.next_response_seconds,
        "resolution_seconds": row.resolution_seconds,
        "business_hours_only": row.business_hours_only,
    }


def routing_payload(chat: Chat) -> dict:
    """GET /v1/chats/{id}/routing."""
    row = chat_routing(chat)
    return {
        "queued_at": _iso(row.queued_at) if row else None,
        "assigned_at": _iso(row.assigned_at) if row else None,
        "assigned_by": (row.assigned_by or None) if row else None,
        "reroutes": row.reroutes if row else 0,
        "sla": sla_payload(chat),
    }
