"""Routing writes: the settings, a chat joining the queue, the assignment decisions, re-routing and
handing an absent operator's chats back to the queue.

Every decision of a widget runs in its own transaction holding the widget's `RoutingSettings` row
locked (`_lock_widget`), so decisions of one widget never interleave: two operators freeing a slot
at once never take the same chat, two chats never fill one slot, and the queue is served in order.
A decision takes the lock before any chat row, and the services that lock chats (apps.chats) call
routing only after their commit (on-commit handlers), so the locks are always taken in one order.

The owner is written by `apps.chats.services.set_routing_owner`, which emits chat.assigned; this
app's handler of that event keeps the chat's `ChatRouting` row (assignment time, wait, re-route due
time) whoever assigned it.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.db import transaction
from django.utils import timezone

from apps.agents import selectors as agent_selectors
from apps.agents.models import Agent
from apps.audit import services as audit
from apps.chats import services as chat_services
from apps.chats.models import Chat
from apps.core import events, ports
from apps.core.models import Widget

from . import selectors
from .models import ChatRouting, OperatorRouting, RoutingSettings

logger = logging.getLogger(__name__)

MODES = tuple(RoutingSettings.Mode.values)
CAPACITY_RANGE = (1, 50)
REROUTE_RANGE = (15, 900)
# Decisions one `serve` call makes at most (a larger queue is served by the next call).
SERVE_BATCH = 200
# How many chats of the queue's head one decision looks at for one an eligible operator can take
# (a chat nobody online may serve, e.g. a messenger's department is closed, never blocks the rest).
HEAD_WINDOW = 50
# An operator whose last console socket closed is given this long to come back (a page reload)
# before their open chats go back to the queue.
OFFLINE_GRACE = timedelta(seconds=20)


# --- settings ---------------------------------------------------------------------------------------------


@transaction.atomic
def put_settings(*, widget: Widget, data: dict) -> RoutingSettings:
    """PUT /v1/routing: the whole resource (the serializer checked every member). The served config
    is refreshed (it shows the queue position setting), and a queue waiting under `manual` is served
    once a routing mode is on (the change's handlers)."""
    row, _ = RoutingSettings.objects.select_for_update().get_or_create(widget=widget)
    before = selectors.settings_payload(row)
    row.mode = data["mode"]
    row.default_capacity = data["default_capacity"]
    row.reroute_after_seconds = data["reroute_after_seconds"]
    row.show_queue_position = data["show_queue_position"]
    row.updated_at = timezone.now()
    row.save()
    after = selectors.settings_payload(row)
    audit.record_change(widget=widget, action="routing.changed", target_type="routing", before=before, after=after)
    events.emit(widget, events.WIDGET_CONFIG_CHANGED)
    return row


# --- the queue ---------------------------------------------------------------------------------------------


def _lock_widget(widget: Widget) -> RoutingSettings:
    """The widget's routing settings row, locked: held by every decision of the widget."""
    row = selectors.locked_settings(widget)
    if row is None:
        RoutingSettings.objects.get_or_create(widget=widget)
        row = RoutingSettings.objects.select_for_update().get(widget=widget)
    return row


def _machine_answers(widget: Widget) -> bool:
    for check in ports.providers(ports.MACHINE_ANSWERER).values():
        try:
            if check(widget):
                return True
        except Exception:  # noqa: BLE001 - a failing check counts as not answering (the port's rule)
            logger.warning("machine answerer check failed for widget %s", widget.pk, exc_info=True)
    return False


def needs_person(chat: Chat, *, handed_over: bool = False, owner_absent: bool = False) -> bool:
    """Whether the (locked) chat waits for routing: routing is on, nobody owns it (or, with
    `owner_absent`, its owner is not online), it is active, and no machine answers it (a machine
    that handed it over, `handed_over`, no longer does)."""
    if chat.status != Chat.Status.ACTIVE:
        return False
    if chat.agent_id is not None and not owner_absent:
        return False
    if selectors.cached_settings(chat.widget)["mode"] == RoutingSettings.Mode.MANUAL:
        return False
    if handed_over or chat.awaiting_human_since is not None:
        return True
    return not _machine_answers(chat.widget)


def enqueue(*, chat: Chat, now: datetime | None = None) -> bool:
    """The (locked) chat joins the queue, in the caller's transaction: by the time it began to wait
    (the first time it did; a chat back in the queue keeps its first time, so it is served before
    later ones). False when it waits already. Emits routing.queue_changed."""
    now = now or timezone.now()
    row, created = ChatRouting.objects.get_or_create(
        chat_id=chat.pk, defaults={"widget_id": chat.widget_id, "queued_at": now, "queue_since": now, "updated_at": now}
    )
    if not created:
        if row.queue_since is not None:
            return False
        row.queued_at = row.queued_at or now
        row.queue_since = now
        row.reroute_due_at = None
        row.updated_at = now
        row.save(update_fields=["queued_at", "queue_since", "reroute_due_at", "updated_at"])
    events.emit(chat.widget, events.QUEUE_CHANGED, objects={"chat": chat}, chat_id=chat.pk, change="joined")
    return True


def requeue_unattended(*, chat: Chat, now: datetime | None = None) -> bool:
    """A visitor writes into a chat whose owner is not online (a closed chat reopening after its
    operator left): routing on, the chat goes back to the queue instead of waiting for them."""
    if selectors.cached_settings(chat.widget)["mode"] == RoutingSettings.Mode.MANUAL:
        return False
    if chat.agent_id in agent_selectors.online_agent_ids(chat.widget):
        return False
    if not needs_person(chat, owner_absent=True):
        return False
    chat_services.set_routing_owner(widget=chat.widget, chat=chat, agent=None, by=ChatRouting.By.ROUTING, locked=True)
    return enqueue(chat=chat, now=now)


def leave_queue(*, chat: Chat, reason: str) -> bool:
    """The chat stops waiting without an assignment (it closed, became spam): routing.queue_changed."""
    updated = ChatRouting.objects.filter(chat_id=chat.pk, queue_since__isnull=False).update(
        queue_since=None, reroute_due_at=None, updated_at=timezone.now()
    )
    if updated:
        events.emit(chat.widget, events.QUEUE_CHANGED, objects={"chat": chat}, chat_id=chat.pk, change=reason)
    return bool(updated)


def serve(widget: Widget, *, limit: int = SERVE_BATCH) -> int:
    """Assign queued chats while an eligible operator has a free slot, one decision per transaction,
    in queue order. Returns how many chats were assigned."""
    if not selectors.anyone_queued(widget):
        return 0
    assigned = 0
    while assigned < limit:
        if not _decide_next(widget):
            break
        assigned += 1
    return assigned


@transaction.atomic
def _decide_next(widget: Widget) -> bool:
    settings = _lock_widget(widget)
    if settings.mode == RoutingSettings.Mode.MANUAL:
        return False
    head = selectors.queue_head(widget, limit=HEAD_WINDOW)
    if not head:
        return False
    pool = selectors.pool(widget, settings)
    if not any(c.free > 0 for c in pool.candidates):
        return False
    for chat_id, channel, timed_out in head:
        choice = selectors.choose(settings.mode, pool.eligible(channel, exclude=timed_out))
        if choice is not None:
            return _assign(widget, Chat(pk=chat_id, widget=widget), choice.agent_id)
    return False


def _operator(widget: Widget, agent_id: int) -> Agent:
    """The chosen operator as the owner write needs it (the pool read them: a human of the widget)."""
    return Agent(pk=agent_id, widget_id=widget.pk, type=Agent.Type.HUMAN)


def _assign(widget: Widget, chat: Chat, agent_id: int) -> bool:
    """Give the chat to the operator (the caller holds the widget's lock)."""
    try:
        # Only the chat's own row: what chat.assigned's handlers read is on it (and the widget).
        locked = chat_services.lock_chat(widget=widget, chat=chat, related=())
        locked.widget = widget
    except Chat.DoesNotExist:  # under erasure meanwhile: it leaves the queue
        leave_queue(chat=Chat(pk=chat.pk, widget=widget), reason="closed")
        return True
    if locked.status != Chat.Status.ACTIVE or locked.agent_id is not None:
        # Closed or taken by a person meanwhile (their handlers normally took it out already).
        leave_queue(chat=locked, reason="closed")
        return True
    chat_services.set_routing_owner(
        widget=widget, chat=locked, agent=_operator(widget, agent_id), by=ChatRouting.By.ROUTING, locked=True
    )
    return True


# --- operators coming and going -----------------------------------------------------------------------------


def operator_offline(*, widget: Widget, agent_id: int, now: datetime | None = None) -> None:
    """The operator's last console socket closed: their open chats go back to the queue once
    OFFLINE_GRACE passes without them coming back (the beat job and a timer task look)."""
    if selectors.cached_settings(widget)["mode"] == RoutingSettings.Mode.MANUAL:
        return  # nothing is handed back under manual routing
    now = now or timezone.now()
    if OperatorRouting.objects.filter(agent_id=agent_id, widget_id=widget.pk).update(offline_since=now):
        return
    if Agent.objects.filter(pk=agent_id, widget=widget, type=Agent.Type.HUMAN).exists():
        OperatorRouting.objects.create(agent_id=agent_id, widget_id=widget.pk, offline_since=now)


def operator_online(*, widget: Widget, agent_id: int) -> None:
    OperatorRouting.objects.filter(agent_id=agent_id, offline_since__isnull=False).update(offline_since=None)


def release_operator(*, widget: Widget, agent_id: int) -> int:
    """Every open chat the operator owns goes back to the queue's head (routing on, and the operator
    offline, suspended or deleted). Returns how many went back."""
    released = 0
    chat_ids = list(
        Chat.objects.filter(widget=widget, agent_id=agent_id, status=Chat.Status.ACTIVE).values_list("pk", flat=True)
    )
    for chat_id in chat_ids:
        if _release_one(widget, chat_id, agent_id):
            released += 1
    return released


@transaction.atomic
def _release_one(widget: Widget, chat_id: int, agent_id: int) -> bool:
    settings = _lock_widget(widget)
    if settings.mode == RoutingSettings.Mode.MANUAL:
        return False
    try:
        chat = chat_services.lock_chat(widget=widget, chat=Chat(pk=chat_id))
    except Chat.DoesNotExist:
        return False
    if chat.agent_id != agent_id or chat.status != Chat.Status.ACTIVE:
        return False
    now = timezone.now()
    row, _ = ChatRouting.objects.get_or_create(chat_id=chat.pk, defaults={"widget_id": widget.pk})
    # Back to the head: it waits since it first needed a person (its creation when it never queued).
    row.queued_at = row.queued_at or chat.created_at
    row.queue_since = row.queued_at
    row.reroute_due_at = None
    row.updated_at = now
    row.save(update_fields=["queued_at", "queue_since", "reroute_due_at", "updated_at"])
    chat_services.set_routing_owner(widget=widget, chat=chat, agent=None, by=ChatRouting.By.ROUTING, locked=True)
    events.emit(widget, events.QUEUE_CHANGED, objects={"chat": chat}, chat_id=chat.pk, change="joined")
    return True


def absent_operators(*, now: datetime | None = None) -> list[tuple[int, int]]:
    """(widget id, agent id) of operators offline longer than OFFLINE_GRACE (the beat job's pass)."""
    now = now or timezone.now()
    return list(
        OperatorRouting.objects.filter(offline_since__lte=now - OFFLINE_GRACE).values_list("widget_id", "agent_id")
    )


def settle_absent(*, widget: Widget, agent_id: int) -> int:
    """An operator offline past the grace: unless they came back, their chats go back to the queue
    and the queue is served. Returns how many chats went back."""
    still_offline = OperatorRouting.objects.filter(agent_id=agent_id, offline_since__isnull=False).update(
        offline_since=None
    )
    if not still_offline or agent_id in agent_selectors.online_agent_ids(widget):
        return 0
    released = release_operator(widget=widget, agent_id=agent_id)
    if released:
        serve(widget)
    return released


# --- re-routing ---------------------------------------------------------------------------------------------


def overdue_reroutes(*, now: datetime | None = None, limit: int = 500) -> list[tuple[int, int]]:
    """(widget id, chat id) of assignments whose operator let the re-route timer run out."""
    now = now or timezone.now()
    return list(
        ChatRouting.objects.filter(reroute_due_at__lte=now)
        .order_by("reroute_due_at")
        .values_list("widget_id", "chat_id")[:limit]
    )


@transaction.atomic
def reroute(*, widget: Widget, chat_id: int, now: datetime | None = None) -> bool:
    """The chat's operator sent nothing visible within `reroute_after_seconds` of the assignment: it
    moves to the next eligible operator, never back to one who timed out on it. With nobody else
    eligible it stays (the due time stays, so the next pass tries again). True when it moved."""
    now = now or timezone.now()
    settings = _lock_widget(widget)
    row = ChatRouting.objects.select_for_update().filter(chat_id=chat_id, widget_id=widget.pk).first()
    if row is None or row.reroute_due_at is None or row.reroute_due_at > now:
        return False
    try:
        chat = chat_services.lock_chat(widget=widget, chat=Chat(pk=chat_id))
    except Chat.DoesNotExist:
        row.reroute_due_at = None
        row.save(update_fields=["reroute_due_at"])
        return False
    if settings.mode == RoutingSettings.Mode.MANUAL or chat.status != Chat.Status.ACTIVE or chat.agent_id is None:
        row.reroute_due_at = None
        row.save(update_fields=["reroute_due_at"])
        return False
    timed_out = list(row.timed_out)
    if chat.agent_id not in timed_out:
        timed_out.append(chat.agent_id)
    row.timed_out = timed_out
    choice = selectors.choose(
        settings.mode, selectors.pool(widget, settings, now=now).eligible(chat.channel, exclude=timed_out)
    )
    if choice is None:
        row.save(update_fields=["timed_out"])
        return False
    row.reroutes += 1
    row.save(update_fields=["timed_out", "reroutes"])
    chat_services.set_routing_owner(
        widget=widget, chat=chat, agent=_operator(widget, choice.agent_id), by=ChatRouting.By.ROUTING, locked=True
    )
    return True


# --- what chat.assigned changes (the handler's work) --------------------------------------------------------


def record_assignment(*, chat: Chat, agent_id: int | None, by: str, now: datetime | None = None) -> None:
    """Keep the chat's routing row in step with a change of its routing owner (in the change's
    transaction): assignment time and who assigned, the wait it ends, the re-route timer an
    automatic assignment starts, the operator's last assignment for round robin."""
    now = now or timezone.now()
    row = selectors.chat_routing(chat)
    if row is None:
        row, _ = ChatRouting.objects.get_or_create(chat_id=chat.pk, defaults={"widget_id": chat.widget_id})
    if agent_id is None:
        return  # back in the queue: `release` wrote the row already
    left_queue = row.queue_since is not None
    if left_queue and row.wait_seconds is None and row.queued_at is not None:
        row.wait_seconds = max((now - row.queued_at).total_seconds(), 0.0)
    row.queue_since = None
    row.assigned_at = now
    row.assigned_by = by
    row.reroute_due_at = None
    if by == ChatRouting.By.ROUTING:
        after = selectors.cached_settings(chat.widget)["reroute_after_seconds"]
        if after:
            row.reroute_due_at = now + timedelta(seconds=after)
        # One upsert: round robin's turn moves on.
        OperatorRouting.objects.bulk_create(
            [OperatorRouting(agent_id=agent_id, widget_id=chat.widget_id, last_assigned_at=now)],
            update_conflicts=True,
            unique_fields=["agent"],
            update_fields=["last_assigned_at"],
        )
    row.updated_at = now
    row.save()
    if left_queue:
        events.emit(chat.widget, events.QUEUE_CHANGED, objects={"chat": chat}, chat_id=chat.pk, change="assigned")


def record_answered(*, chat: Chat) -> None:
    """The operator sent a visible message: the re-route timer stops."""
    ChatRouting.objects.filter(chat_id=chat.pk, reroute_due_at__isnull=False).update(reroute_due_at=None)
