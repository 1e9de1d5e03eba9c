"""Domain events: the catalogue of names and the transactional outbox.

`emit(widget, type, **data)` writes an OutboxEvent row in the caller's transaction and, when that
transaction commits, hands its id to the fan-out task. If the hand-off is lost (broker down, worker
killed), the beat job `redrive_outbox` finds rows never fanned out and hands them off again, so an
event committed with its change is never lost. Handlers (the webhooks app) are listed in
settings.EVENT_HANDLERS; each takes a list of events and must be idempotent on the event ids.

A fan-out task takes its own event and, in the same transaction, up to FAN_OUT_BATCH - 1 other
events still waiting (oldest first, rows another worker holds skipped): under a burst, one task
does the work of many in a few statements, and the tasks of the events it took find them done.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone
from django.utils.module_loading import import_string

from apps.core.models import OutboxEvent, Widget

logger = logging.getLogger(__name__)

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
}

# The legacy vocabulary and its native mapping.
LEGACY_NAMES: dict[str, str] = {
    "chat_updated": CHAT_TRANSFERRED,
    "chat_finished": CHAT_CLOSED,
    "chat_accepted": CHAT_ACCEPTED,
    "offline_message": OFFLINE_MESSAGE_CREATED,
    "client_updated": CONTACT_UPDATED,
}

REDRIVE_AFTER = timedelta(seconds=60)
FAN_OUT_BATCH = 100


def emit(widget: Widget, type: str, **data) -> OutboxEvent:
    """Record an event in the current transaction; fan it out after commit.

    `data` must carry exactly the catalogue's fields for `type`; `button_guid` is added here.
    """
    if type not in CATALOGUE:
        raise ValueError(f"unknown event type {type!r}")
    expected = set(CATALOGUE[type])
    if set(data) != expected:
        raise ValueError(f"{type} needs fields {sorted(expected)}, got {sorted(data)}")
    event = OutboxEvent.objects.create(widget=widget, type=type, data={**data, "button_guid": widget.button_guid})
    transaction.on_commit(lambda: _hand_off(event.pk))
    return event


def _hand_off(event_id) -> None:
    from apps.core.tasks import fan_out_event

    try:
        fan_out_event.delay(str(event_id))
    except Exception:  # broker down: the beat re-drive picks the row up later
        logger.warning("outbox hand-off failed; the re-drive job will retry", extra={"event_id": str(event_id)})


def handlers():
    return [import_string(path) for path in settings.EVENT_HANDLERS]


def fan_out(event_id, *, batch_size: int = FAN_OUT_BATCH) -> bool:
    """Run every handler for this event (and the waiting ones taken with it), then mark them
    dispatched. Returns False when the event was already dispatched. Safe to run twice.

    When the handlers fail on the batch, it is rolled back and this event alone is run again, so
    one event that cannot fan out holds back no other (their own tasks or the re-drive take them)."""
    pending = OutboxEvent.objects.filter(pk=event_id, dispatched_at__isnull=True)
    if not pending.exists():  # one read, no lock: under a burst an earlier task usually took it
        return False
    with transaction.atomic():
        event = pending.select_for_update().first()
        if event is None:
            return False
        others = []
        if batch_size > 1:
            others = list(
                OutboxEvent.objects.select_for_update(skip_locked=True)
                .filter(dispatched_at__isnull=True)
                .exclude(pk=event.pk)
                .order_by("created_at")[: batch_size - 1]
            )
        if others:
            try:
                with transaction.atomic():
                    _dispatch([event, *others])
                return True
            except Exception:
                logger.warning("outbox batch fan-out failed; running the event alone", exc_info=True)
        _dispatch([event])
    return True


def _dispatch(batch: list[OutboxEvent]) -> None:
    for handler in handlers():
        handler(batch)
    OutboxEvent.objects.filter(pk__in=[event.pk for event in batch]).update(
        dispatched_at=timezone.now(), attempts=F("attempts") + 1
    )


def pending_for_redrive(now=None, limit: int = 500) -> list:
    now = now or timezone.now()
    return list(
        OutboxEvent.objects.filter(dispatched_at__isnull=True, created_at__lte=now - REDRIVE_AFTER)
        .order_by("created_at")
        .values_list("pk", flat=True)[:limit]
    )
