"""Domain events: the one event bus. A service calls `emit()` once per change and nothing else;
every side effect of that change is a handler registered by the app that owns the effect, in its
`AppConfig.ready()`:

- in-transaction handlers run inside `emit()`, in the caller's transaction, so what they write
  (the statistics facts) commits or rolls back with the change (`subscribe(..., phase=IN_TRANSACTION)`);
- on-commit handlers run once the transaction commits, never for a rolled-back change (websocket
  pushes, widget cache purges) (`subscribe(..., phase=ON_COMMIT)`);
- outbox handlers see the public events (the spec's catalogue) after fan-out (`subscribe_outbox`).

Public events (CATALOGUE) are also written as an OutboxEvent row in the caller's transaction and,
when it commits, handed to the fan-out task: one task per transaction's batch of events (at most
FAN_OUT_BATCH ids a task), not one per event. If the hand-off is lost (broker down, worker killed),
the beat job `redrive_outbox` finds rows never fanned out and hands them off again, so an event
committed with its change is never lost. Outbox handlers (webhook fan-out) take a list of events
and must be idempotent on the event ids. Internal events (INTERNAL) have no outbox row: they exist
for the in-process handlers only.

A fan-out task reads its events in one query (locked; the ones already dispatched left out) and,
when they waited longer than STEAL_AFTER and are fewer than FAN_OUT_BATCH, takes other events
still waiting in the same transaction (oldest first, rows another worker holds skipped): under a
backlog of one-event transactions, one task does the work of many in a few statements, and the
tasks of the events it took find them done.
"""

from __future__ import annotations

import contextvars
import logging
import weakref
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Literal

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone
from django.utils.module_loading import import_string

from apps.core import queueing
from apps.core.models import OutboxEvent, Widget

logger = logging.getLogger(__name__)

# --- the public catalogue (webhooks) ----------------------------------------------------------------

MESSAGE_CREATED = "message.created"
CHAT_CREATED = "chat.created"
CHAT_TRANSFERRED = "chat.transferred"
CHAT_CLOSED = "chat.closed"
RATING_CREATED = "rating.created"
AGENT_ONLINE = "agent.online"
AGENT_OFFLINE = "agent.offline"
CHAT_ACCEPTED = "chat.accepted"
OFFLINE_MESSAGE_CREATED = "offline_message.created"
CONTACT_UPDATED = "contact.updated"
CONTACT_ERASED = "contact.erased"
CHAT_ASSIGNED = "chat.assigned"
SLA_BREACHED = "sla.breached"
SLA_MET = "sla.met"
CONTACT_MERGED = "contact.merged"
CHAT_LABELS_CHANGED = "chat.labels_changed"

# name -> data fields besides button_guid (the spec's event catalogue).
CATALOGUE: dict[str, tuple[str, ...]] = {
    MESSAGE_CREATED: ("chat_id", "message_id", "client_id", "author_type", "source"),
    CHAT_CREATED: ("chat_id", "client_id", "source"),
    CHAT_TRANSFERRED: ("chat_id", "client_guid", "from_operator_id", "to_operator_id", "author_type", "source"),
    CHAT_CLOSED: ("chat_id", "reason"),
    RATING_CREATED: ("chat_client_id", "operator_id", "author_type", "source"),
    AGENT_ONLINE: ("operator_id",),
    AGENT_OFFLINE: ("operator_id",),
    CHAT_ACCEPTED: ("chat_id", "operator_id", "operator_type", "client_id"),
    OFFLINE_MESSAGE_CREATED: ("chat_id", "client_id", "message_id", "name", "email", "phone"),
    CONTACT_UPDATED: ("client_id", "changed_fields"),
    CONTACT_ERASED: ("contact_id",),
    # the chat's routing owner changed (`agent_id` null: back in the queue); `by` routing, agent,
    # api or automation (a macro or a rule)
    CHAT_ASSIGNED: ("chat_id", "agent_id", "by"),
    SLA_BREACHED: ("chat_id", "policy_id", "kind"),
    # a contact (`from`, its former guid) was merged into another (`into`): the first reads as missing
    CONTACT_MERGED: ("from", "into"),
    # the chat's labels after the change, sorted without regard to case
    CHAT_LABELS_CHANGED: ("chat_id", "labels"),
}

# The legacy vocabulary and its native mapping.
LEGACY_NAMES: dict[str, str] = {
    "chat_updated": CHAT_TRANSFERRED,
    "chat_finished": CHAT_CLOSED,
    "chat_accepted": CHAT_ACCEPTED,
    "offline_message": OFFLINE_MESSAGE_CREATED,
    "client_updated": CONTACT_UPDATED,
}

# --- internal events (no outbox row, no webhook) ------------------------------------------------------

CHAT_STATUS_CHANGED = "chat.status_changed"
CHAT_ATTRIBUTED = "chat.attributed"
CHAT_DEPARTMENT_CHANGED = "chat.department_changed"
CHAT_AWAITING_HUMAN = "chat.awaiting_human"
CHAT_TYPING = "chat.typing"
MESSAGES_SEEN = "message.seen"
RATING_REQUESTED = "rating.requested"
RATING_UPDATED = "rating.updated"
WIDGET_CREATED = "widget.created"
AGENT_PROFILE_CHANGED = "agent.profile_changed"
ACCOUNT_PROFILE_CHANGED = "account.profile_changed"
WIDGET_CONFIG_CHANGED = "widget.config_changed"
CHAT_CODE_REQUESTED = "chat.code_requested"
CONTACT_ERASURE_ACCEPTED = "contact.erasure_accepted"
# knowledge base (apps.kb): internal only, never in the webhook catalogue
KB_RULE_CREATED = "kb.rule_created"
KB_RULE_UPDATED = "kb.rule_updated"
KB_RULE_DELETED = "kb.rule_deleted"
KB_SOURCE_DELETED = "kb.source_deleted"
KB_DOCUMENT_STATE_CHANGED = "kb.document_state_changed"
KB_DOCUMENT_DELETED = "kb.document_deleted"
KB_CRAWLER_CHANGED = "kb.crawler_changed"
KB_CRAWL_PAGE_CHANGED = "kb.crawl_page_changed"
KB_CRAWL_FINISHED = "kb.crawl_finished"
# routing (apps.routing)
QUEUE_CHANGED = "routing.queue_changed"
QUEUE_POSITIONS = "routing.queue_positions"
# mentions (apps.mentions)
MENTION_CREATED = "mention.created"

INTERNAL: dict[str, tuple[str, ...]] = {
    # a status move that is not a close (set_chat_state, the idle sweep's re-activation)
    CHAT_STATUS_CHANGED: ("chat_id", "status"),
    # an operator took an already accepted chat (handler or owner changed, no chat.accepted)
    CHAT_ATTRIBUTED: ("chat_id", "operator_id"),
    # a macro or a rule set the chat's department (`department_id` null: none); `by` macro or automation
    CHAT_DEPARTMENT_CHANGED: ("chat_id", "department_id", "by"),
    # a machine operator handed the chat to people (escalation, provider failure); a person's
    # answer ends the wait
    CHAT_AWAITING_HUMAN: ("chat_id", "reason"),
    CHAT_TYPING: ("chat_id", "state", "by"),
    MESSAGES_SEEN: ("chat_id", "message_id", "by"),
    # the system message asking for a rating was stored
    RATING_REQUESTED: ("chat_id", "message_id"),
    # a second rating replaced the first: the previous value and agent, as the rollups counted them
    RATING_UPDATED: ("chat_id", "previous_value", "previous_operator_id"),
    # a new widget of an account (its owner becomes its first agent)
    WIDGET_CREATED: (),
    # something the public widget config shows changed (or its owner asked for a fresh copy)
    AGENT_PROFILE_CHANGED: ("operator_id",),
    ACCOUNT_PROFILE_CHANGED: ("account_id",),
    WIDGET_CONFIG_CHANGED: (),
    # an SLA clock stopped in time (apps.routing.sla.stop_clocks); its breach is the public sla.breached
    SLA_MET: ("chat_id", "kind"),
    # the chat's assistant asks to prove the customer's mailbox by an e-mail code (email optional:
    # without it the chat waits for the mailbox); apps.support mails it unless an agent handles the chat
    CHAT_CODE_REQUESTED: ("chat_id", "email"),
    # a contact's erasure was accepted: from this commit on the contact reads as missing and its
    # visitor sessions are gone (apps.privacy; `contact.erased` follows once the worker has run)
    CONTACT_ERASURE_ACCEPTED: ("contact_guid",),
    # knowledge-base writes (apps.kb.services): one per change of rules, documents, the crawler
    KB_RULE_CREATED: ("rule_id", "source_ref"),
    KB_RULE_UPDATED: ("rule_id", "fields"),
    KB_RULE_DELETED: ("rule_id", "source_ref"),
    KB_SOURCE_DELETED: ("source_ref", "deleted"),
    # an upload's ingestion state moved (queued on upload, processing, ready, failed)
    KB_DOCUMENT_STATE_CHANGED: ("document_id", "state", "error"),
    KB_DOCUMENT_DELETED: ("document_id", "deleted_chunks"),
    # the crawler configuration was replaced (a crawl queued) or removed
    KB_CRAWLER_CHANGED: ("action", "generation"),
    # a crawled page's rules were (re)written or retired (`change`: indexed or retired)
    KB_CRAWL_PAGE_CHANGED: ("url", "change", "chunks"),
    # a crawl ended: finished, failed or cancelled
    KB_CRAWL_FINISHED: ("run_id", "status", "error"),
    # a chat joined the routing queue or left it (`change`: joined, assigned, closed)
    QUEUE_CHANGED: ("chat_id", "change"),
    # after a queue change: the visitors whose place or estimated wait changed, as
    # [[chat_id, position, estimated_wait_seconds], ...] (both null for a chat that left the queue)
    QUEUE_POSITIONS: ("positions",),
    # an operator was named with `@` in a private note (one per mentioned operator)
    MENTION_CREATED: ("mention_id", "chat_id", "agent_id"),
}

REDRIVE_AFTER = timedelta(seconds=60)
FAN_OUT_BATCH = 100
FAN_OUT_BATCH_TASK = "apps.core.tasks.fan_out_batch"
# A hand-off whose events waited this long means the workers are behind: its task takes other
# waiting events with its own (one statement more; not spent while the workers keep up).
STEAL_AFTER = timedelta(milliseconds=500)

IN_TRANSACTION = "in_transaction"
ON_COMMIT = "on_commit"
Phase = Literal["in_transaction", "on_commit"]


@dataclass(frozen=True)
class Event:
    """What a handler receives. `data` holds the catalogue's fields; `objects` the rows the service
    already loaded (a locked chat, the stored message), so handlers read nothing again. Handlers
    that need a row act only when the service handed it over: an event emitted by hand (tests,
    benchmarks) has its outbox row but no in-process effects that need rows."""

    widget: Widget
    type: str
    data: dict[str, Any]
    objects: dict[str, Any] = field(default_factory=dict)

    def obj(self, name: str) -> Any:
        """The object the service handed over under `name`, or None."""
        return self.objects.get(name)


Handler = Callable[[Event], None]
OutboxHandler = Callable[[list[OutboxEvent]], None]

_handlers: dict[tuple[str, str], list[Handler]] = defaultdict(list)
_outbox_handlers: list[OutboxHandler] = []


def subscribe(types: str | Iterable[str], handler: Handler, *, phase: Phase) -> None:
    """Register `handler` for event `types` (called from the owning app's `AppConfig.ready()`).
    Registering the same handler twice for a type is a no-op (ready() may run twice in tests)."""
    if phase not in (IN_TRANSACTION, ON_COMMIT):
        raise ValueError(f"unknown phase {phase!r}")
    for type in [types] if isinstance(types, str) else types:
        if type not in CATALOGUE and type not in INTERNAL:
            raise ValueError(f"unknown event type {type!r}")
        registered = _handlers[(type, phase)]
        if handler not in registered:
            registered.append(handler)


def subscribe_outbox(handler: OutboxHandler) -> None:
    """Register an outbox handler: called with batches of fanned-out public events."""
    if handler not in _outbox_handlers:
        _outbox_handlers.append(handler)


def handler_names() -> list[tuple[str, str, list[str]]]:
    """Every event type with a handler, as (type, phase, handlers' dotted names) sorted by type and
    phase; the outbox's handlers under each public event type with phase "outbox". The architecture
    page lists them (tests/test_docs.py keeps it in step)."""
    rows = []
    for type in sorted({*CATALOGUE, *INTERNAL}):
        for phase in (IN_TRANSACTION, ON_COMMIT):
            if _handlers.get((type, phase)):
                rows.append((type, phase, [_dotted(handler) for handler in _handlers[(type, phase)]]))
        if type in CATALOGUE and _outbox_handlers:
            rows.append((type, "outbox", [_dotted(handler) for handler in _outbox_handlers]))
    return rows


def _dotted(handler) -> str:
    return f"{handler.__module__}.{getattr(handler, '__qualname__', type(handler).__name__)}"


def emit(widget: Widget, type: str, *, objects: dict[str, Any] | None = None, **data) -> OutboxEvent | None:
    """Announce one change of `widget`. Runs the in-transaction handlers now, queues the on-commit
    ones, and for a public event writes its outbox row (returned) and queues the fan-out hand-off.

    `data` must carry exactly the catalogue's fields for `type`; `button_guid` is added to public
    events here. Call it inside the transaction of the change, after the change is saved.
    """
    fields = CATALOGUE.get(type, INTERNAL.get(type))
    if fields is None:
        raise ValueError(f"unknown event type {type!r}")
    if set(data) != set(fields):
        raise ValueError(f"{type} needs fields {sorted(fields)}, got {sorted(data)}")
    row = None
    if type in CATALOGUE:
        row = OutboxEvent(widget=widget, type=type, data={**data, "button_guid": widget.button_guid})
        row.save(force_insert=True)
        _batch_for(row.pk)
    event = Event(widget=widget, type=type, data=data, objects=objects or {})
    for handler in _handlers.get((type, IN_TRANSACTION), ()):
        handler(event)
    for handler in _handlers.get((type, ON_COMMIT), ()):
        transaction.on_commit(_after_commit(handler, event))
    return row


def _after_commit(handler: Handler, event: Event) -> Callable[[], None]:
    def run() -> None:
        try:
            handler(event)
        except Exception:  # the change is committed; an after-commit effect is best effort
            logger.exception("on-commit event handler failed", extra={"event_type": event.type})

    return run


class _HandOff:
    """The after-commit hand-off of the events one transaction (or savepoint) emits at one savepoint
    level: one fan-out task per FAN_OUT_BATCH of them, in emit order.

    Each event registers the hand-off of its batch with `transaction.on_commit` (one registration
    per event, Django's own seam). The first registration to run after the commit hands the whole
    batch off; the others find it handed off and do nothing. So Django alone decides what survives:
    a savepoint that rolls back drops its events' registrations, and a batch never holds an event of
    another savepoint level (see `_batch_for`)."""

    def __init__(self, sids: frozenset) -> None:
        self.sids = sids
        self.ids: list = []
        self.fired = False

    def add(self, event_id) -> None:
        self.ids.append(event_id)
        transaction.on_commit(self)

    def __call__(self) -> None:
        if self.fired:
            return
        self.fired = True
        for start in range(0, len(self.ids), FAN_OUT_BATCH):
            _hand_off([str(pk) for pk in self.ids[start : start + FAN_OUT_BATCH]])


# The batch the next event of this thread's (or task's) transaction joins. Weakly held: the strong
# references are the on-commit registrations, so the batch lives exactly as long as Django keeps
# one of them, and a transaction that ended (committed, rolled back) leaves nothing to join.
_open_batch: contextvars.ContextVar[weakref.ref | None] = contextvars.ContextVar("outbox_batch", default=None)


def _batch_for(event_id) -> None:
    """Queue the hand-off of one committed-to-be event: at once outside a transaction (the row is
    committed already), else in the batch of the current savepoint level.

    Joining only at the same level keeps the outbox's guarantee: Django drops the on-commit
    registrations of a savepoint that rolls back, so an event never joins a batch that a rollback
    it survives would drop. And every event registers the batch itself, so an event is handed off
    once its own transaction commits whatever became of the batch's earlier members (a batch that
    lived on by mistake costs the fan-out a look at ids that were never committed, and the re-drive
    catches what a broker outage loses)."""
    connection = transaction.get_connection()
    if not connection.in_atomic_block:
        _hand_off([str(event_id)])
        return
    sids = frozenset(connection.savepoint_ids)
    ref = _open_batch.get()
    batch = ref() if ref is not None else None
    if batch is None or batch.fired or batch.sids != sids:
        batch = _HandOff(sids)
        _open_batch.set(weakref.ref(batch))
    batch.add(event_id)


def send_fan_out_batch(event_ids: list[str]) -> None:
    """Queue the fan_out_batch task for these ids, sent by name (apps.core.tasks imports this
    module). The worker's log names the first id and the count: Celery's default repr repeats every
    argument, 100 event ids on each "Received task" line."""
    ids = [str(pk) for pk in event_ids]
    shown = f"[{ids[0]!r}, ... {len(ids)} ids]" if len(ids) > 1 else repr(ids)
    queueing.task(FAN_OUT_BATCH_TASK).apply_async((ids,), argsrepr=f"({shown},)")


def _hand_off(event_ids: list[str]) -> None:
    try:
        send_fan_out_batch(event_ids)
    except Exception:  # broker down: the beat re-drive picks the rows up later
        logger.warning(
            "outbox hand-off failed; the re-drive job will retry",
            extra={"event_ids": [str(pk) for pk in event_ids]},
        )


def handlers() -> list[OutboxHandler]:
    """The outbox handlers: settings.EVENT_HANDLERS (dotted paths) when set, else the registered ones."""
    if getattr(settings, "EVENT_HANDLERS", None):
        return [import_string(path) for path in settings.EVENT_HANDLERS]
    return list(_outbox_handlers)


def fan_out(event_id, *, batch_size: int = FAN_OUT_BATCH) -> bool:
    """Fan out one event (and waiting ones taken with it, see `fan_out_many`). Returns False when
    the event was already dispatched. Safe to run twice."""
    return fan_out_many([event_id], batch_size=batch_size) > 0


def fan_out_many(event_ids: list, *, batch_size: int = FAN_OUT_BATCH) -> int:
    """Run every outbox handler for these events (one transaction's hand-off), then mark them
    dispatched. Returns how many of `event_ids` this call dispatched (0: all were dispatched
    already, by an earlier run or a task that took them). Safe to run twice.

    The events are read and locked in one query, in id order (two tasks never wait on each other
    in a cycle). When the oldest of them waited longer than STEAL_AFTER (the workers are behind),
    other waiting events are taken too, up to `batch_size` (SKIP LOCKED, oldest first), so a
    backlog of one-event hand-offs is worked off in batches. When the handlers fail on a batch of
    several events, it is rolled back and each own event is run alone in a savepoint, so one event
    that cannot fan out holds back no other (the failed one waits for the re-drive); when all of
    them fail, the error is raised. One event alone takes no savepoint: it commits or fails whole."""
    with transaction.atomic():
        own = _lock_waiting(event_ids)
        if not own:
            return 0
        others = []
        if batch_size > len(own) and min(event.created_at for event in own) < timezone.now() - STEAL_AFTER:
            others = list(
                OutboxEvent.objects.select_for_update(skip_locked=True)
                .filter(dispatched_at__isnull=True)
                .exclude(pk__in=[event.pk for event in own])
                .order_by("created_at")[: batch_size - len(own)]
            )
        if len(own) == 1 and not others:
            _dispatch(own)
            return 1
        try:
            with transaction.atomic():
                _dispatch([*own, *others])
            return len(own)
        except Exception as exc:
            logger.warning("outbox batch fan-out failed; running its events one at a time", exc_info=True)
            failure: Exception = exc
        done = 0
        for event in own:
            try:
                with transaction.atomic():
                    _dispatch([event])
                done += 1
            except Exception as exc:
                failure = exc
                logger.warning("outbox event could not fan out; the re-drive job will retry", exc_info=True)
        if not done:
            raise failure
    return done


def _dispatch(batch: list[OutboxEvent]) -> None:
    for handler in handlers():
        handler(batch)
    OutboxEvent.objects.filter(pk__in=[event.pk for event in batch]).update(
        dispatched_at=timezone.now(), attempts=F("attempts") + 1
    )


def _lock_waiting(event_ids: list) -> list[OutboxEvent]:
    """The events of `event_ids` not yet dispatched, locked until the transaction ends, in id order."""
    return list(
        OutboxEvent.objects.select_for_update()
        .filter(pk__in=list(event_ids), dispatched_at__isnull=True)
        .order_by("pk")
    )


def pending_for_redrive(now=None, limit: int = 500) -> list:
    now = now or timezone.now()
    return list(
        OutboxEvent.objects.filter(dispatched_at__isnull=True, created_at__lte=now - REDRIVE_AFTER)
        .order_by("created_at")
        .values_list("pk", flat=True)[:limit]
    )
