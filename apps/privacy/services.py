"""Erasure of a contact and of expired chats: one set of rules for the API, Django admin and the
retention job.

An erasure is accepted in one short transaction (`request_contact_erasure`): the contact is marked
(apps.erasure), its visitor sessions end and the audit row is written. From that commit on, the
contact and its chats read as missing and every chat write refuses them (apps.chats takes the mark
into its lookups and locks), so nothing half-erased is readable and nothing writes the contact back.
The worker (`erase_contact`) then deletes in batches, each batch its own short transaction:

1. the messages of each chat (`BATCH` a transaction; what refers to a message goes with it, by the
   foreign keys' own rules), the files only those messages used and the AI demand signals recorded
   from the visitor's messages among them (a signal keeps the words, not the chat);
2. the contact's visitor uploads;
3. the webhook delivery log: the outbox events that name the contact or its chats, their
   deliveries' bodies and the receivers' answers are replaced by a redaction marker, and what was
   not sent yet is never sent;
4. in one last transaction, with the contact's row locked: what arrived meanwhile, the chats
   (ratings, transfers, claims and the other rows of a chat go with them), the contact (tags,
   sessions), the mark, and `contact.erased`, emitted exactly once.

Every step finds its work from the database, not from the run before it, so a run that died
halfway is finished by the next one (the task is re-queued by the broker; `resume_erasures` also
picks up marks whose run was lost). Stored bytes are deleted after the commit that deleted their
File rows (`StoredBytesDeletion`). Statistics rollups (apps.stats) hold no personal data and stay.

Retention (`erase_expired_chats`) deletes chats whose last message is older than the widget's
window with the same steps, chat by chat; a chat that receives a message meanwhile is kept (with
its new messages).
"""

from __future__ import annotations

import logging
from collections import Counter
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import F, Q
from django.db.models.functions import Coalesce
from django.utils import timezone

from apps.audit.services import record
from apps.chats.models import Chat, Contact, Message, VisitorSession
from apps.core import events, queueing
from apps.core.errors import NotFound
from apps.core.models import File, OutboxEvent, Widget
from apps.erasure.models import PendingErasure
from apps.external.models import Call
from apps.learning.services import forget_demand
from apps.webhooks.models import Attempt, Delivery
from apps.widget.models import WidgetIcon

from .models import RETENTION_MAX_DAYS, RETENTION_MIN_DAYS, RetentionPolicy, StoredBytesDeletion

logger = logging.getLogger(__name__)

BATCH = 500
# Chat ids per OR-ed lookup of the outbox events naming them.
CHAT_ID_CHUNK = 200
REDACTED = {"erased": True}
REDACTED_BODY = '{"erased":true}'
# A mark whose run has not finished after this long is queued again by resume_erasures.
RESUME_AFTER = timedelta(minutes=30)


# --- accepting an erasure ------------------------------------------------------------------------


@transaction.atomic
def request_contact_erasure(*, widget: Widget, contact: Contact, source: str = PendingErasure.Source.API) -> None:
    """Accept the erasure of `contact`: mark it, end its visitor sessions, record the audit row and
    queue the worker after the commit. A contact of another widget, a missing one or one already
    being erased is NotFound (a second call on an erased guid is 404)."""
    locked = Contact.objects.select_for_update().filter(pk=contact.pk, widget=widget).first()
    if locked is None or PendingErasure.objects.filter(contact_id=locked.pk).exists():
        raise NotFound()
    mark = PendingErasure.objects.create(widget=widget, contact_id=locked.pk, source=source)
    VisitorSession.objects.filter(contact=locked).delete()
    # The person's verified id is let go at once: their next verified login makes a new contact
    # instead of meeting the one being erased (the id names one contact per widget).
    Contact.objects.filter(pk=locked.pk).update(external_id="", verified_at=None)
    record(widget=widget, action="contact.erased", target_type="contact", target_id=locked.guid)
    events.emit(widget, events.CONTACT_ERASURE_ACCEPTED, contact_guid=locked.guid)
    transaction.on_commit(lambda: _queue(mark.pk))


def _queue(pending_id: int) -> None:
    queueing.task("apps.privacy.tasks.erase_contact_task").delay(pending_id)


def resume_erasures(*, now: datetime | None = None) -> int:
    """Queue again the marks whose run was lost (a worker killed before the broker re-delivered):
    accepted over RESUME_AFTER ago and not moved by a job for as long."""
    cutoff = (now or timezone.now()) - RESUME_AFTER
    quiet = Q(last_run_at__lt=cutoff) | Q(last_run_at__isnull=True)
    ids = list(PendingErasure.objects.filter(quiet, requested_at__lt=cutoff).values_list("pk", flat=True)[:1000])
    for pending_id in ids:
        _queue(pending_id)
    return len(ids)


# --- the worker ------------------------------------------------------------------------------------


def erase_contact(*, pending_id: int, batch_size: int = BATCH) -> dict[str, int] | None:
    """Erase the contact of one accepted mark (see the module docstring). Safe to run again at any
    point; a mark already finished is None."""
    mark = PendingErasure.objects.filter(pk=pending_id).select_related("widget").first()
    if mark is None:
        return None
    PendingErasure.objects.filter(pk=mark.pk).update(runs=F("runs") + 1, last_run_at=timezone.now())
    drain_stored_bytes()
    counts: Counter[str] = Counter()
    contact = Contact.objects.filter(pk=mark.contact_id, widget_id=mark.widget_id).first()
    if contact is not None:
        chat_ids = list(Chat.objects.filter(contact_id=contact.pk).values_list("pk", flat=True))
        for chat_id in chat_ids:
            counts += _delete_messages(widget_id=mark.widget_id, chat_id=chat_id, batch_size=batch_size)
            PendingErasure.objects.filter(pk=mark.pk).update(last_run_at=timezone.now())
        counts["files"] += _delete_uploads(contact=contact, batch_size=batch_size)
        counts["webhook_events"] += _redact_webhook_log(
            widget_id=mark.widget_id, guid=contact.guid, chat_ids=chat_ids, batch_size=batch_size
        )
    with transaction.atomic():
        contact = Contact.objects.select_for_update().filter(pk=mark.contact_id, widget_id=mark.widget_id).first()
        if contact is not None:
            chat_ids = list(Chat.objects.filter(contact_id=contact.pk).values_list("pk", flat=True))
            # what arrived after the batches (writes in flight when the mark committed)
            for chat_id in chat_ids:
                counts += _delete_messages(widget_id=mark.widget_id, chat_id=chat_id, batch_size=None)
            counts["files"] += _delete_uploads(contact=contact, batch_size=None)
            counts["webhook_events"] += _redact_webhook_log(
                widget_id=mark.widget_id, guid=contact.guid, chat_ids=chat_ids, batch_size=None
            )
            counts["chats"] += len(chat_ids)
            Chat.objects.filter(pk__in=chat_ids).delete()
            contact.delete()
            events.emit(mark.widget, events.CONTACT_ERASED, contact_id=contact.guid)
        PendingErasure.objects.filter(pk=mark.pk).delete()
        transaction.on_commit(drain_stored_bytes)
    logger.info("contact erased", extra={"widget_id": mark.widget_id, **counts})
    return dict(counts)


def _delete_messages(
    *, widget_id: int, chat_id: int, batch_size: int | None, before: datetime | None = None
) -> Counter[str]:
    """Delete the chat's messages (created before `before`, when given) and the files only they
    used: `batch_size` a transaction, or all at once inside the caller's transaction (None)."""
    total: Counter[str] = Counter()
    while True:
        with transaction.atomic():
            queryset = Message.objects.filter(chat_id=chat_id)
            if before is not None:
                queryset = queryset.filter(created_at__lt=before)
            rows = queryset.order_by("pk").values_list("pk", "file_id")
            rows = list(rows if batch_size is None else rows[:batch_size])
            if not rows:
                return total
            ids = [pk for pk, _ in rows]
            # a visitor's question is also kept as a demand signal's topic and sample
            questions = Message.objects.filter(pk__in=ids, author_kind=Message.Author.CLIENT).values_list(
                "body", flat=True
            )
            total["demand_signals"] += forget_demand(widget_id=widget_id, questions=questions, before=before)
            # an external operator's calls about these messages are endpoint deliveries (no event)
            _redact_deliveries(
                Delivery.objects.filter(pk__in=Call.objects.filter(message_id__in=ids).values("delivery_id"))
            )
            Message.objects.filter(pk__in=ids).delete()
            total["files"] += _delete_files(widget_id=widget_id, file_ids={file_id for _, file_id in rows if file_id})
            total["messages"] += len(ids)
        if batch_size is None:
            return total


def _delete_uploads(*, contact: Contact, batch_size: int | None) -> int:
    """Delete the files the contact uploaded (the visitor API's uploads), sent or not."""
    total = 0
    while True:
        with transaction.atomic():
            file_ids = contact.uploads.order_by("pk").values_list("file_id", flat=True)
            file_ids = set(file_ids if batch_size is None else file_ids[:batch_size])
            if not file_ids:
                return total
            total += _delete_files(widget_id=contact.widget_id, file_ids=file_ids, uploads=True)
        if batch_size is None:
            return total


def _delete_files(*, widget_id: int, file_ids: set[int], uploads: bool = False) -> int:
    """Delete File rows among `file_ids` that nothing else shows (no other message, no launcher
    icon; a contact's own upload always goes) and queue their bytes for deletion after the commit."""
    if not file_ids:
        return 0
    keep = set(WidgetIcon.objects.filter(file_id__in=file_ids).values_list("file_id", flat=True))
    if not uploads:
        keep |= set(Message.objects.filter(file_id__in=file_ids).values_list("file_id", flat=True))
    files = File.objects.filter(pk__in=file_ids - keep, widget_id=widget_id)
    names = [name for name in files.values_list("stored", flat=True) if name]
    StoredBytesDeletion.objects.bulk_create([StoredBytesDeletion(name=name) for name in names])
    deleted = files.delete()[1].get(File._meta.label, 0)
    if names:
        transaction.on_commit(drain_stored_bytes)
    return deleted


def drain_stored_bytes(*, limit: int = 1000) -> int:
    """Delete the stored bytes of deleted files (see StoredBytesDeletion). Outside a transaction."""
    storage = File._meta.get_field("stored").storage
    done = 0
    for row in StoredBytesDeletion.objects.order_by("pk")[:limit]:
        try:
            storage.delete(row.name)
        except OSError:
            logger.warning("stored file not deleted; kept for the next run", extra={"row": row.pk})
            continue
        row.delete()
        done += 1
    return done


def _naming(*, guid: str | None, chat_ids: list[int]) -> Q:
    """Outbox events whose data names the contact or one of the chats."""
    condition = Q(pk__in=[])
    if guid:
        condition |= Q(data__client_id=guid) | Q(data__client_guid=guid) | Q(data__chat_client_id=guid)
    for start in range(0, len(chat_ids), CHAT_ID_CHUNK):
        condition |= Q(data__chat_id__in=chat_ids[start : start + CHAT_ID_CHUNK])
    return condition


def _redact_webhook_log(*, widget_id: int, guid: str | None, chat_ids: list[int], batch_size: int | None) -> int:
    """Replace, in the outbox and the delivery log, what the events about the contact or its chats
    carried; events not fanned out yet are never fanned out and deliveries not sent are skipped."""
    condition = _naming(guid=guid, chat_ids=chat_ids)
    total = 0
    while True:
        with transaction.atomic():
            ids = OutboxEvent.objects.filter(widget_id=widget_id).filter(condition).order_by("pk")
            ids = list((ids if batch_size is None else ids[:batch_size]).values_list("pk", flat=True))
            if not ids:
                return total
            now = timezone.now()
            _redact_deliveries(Delivery.objects.filter(event_id__in=ids))
            widget_guid = Widget.objects.filter(pk=widget_id).values_list("button_guid", flat=True).first()
            OutboxEvent.objects.filter(pk__in=ids).update(
                data={**REDACTED, "button_guid": widget_guid}, dispatched_at=Coalesce("dispatched_at", now)
            )
            total += len(ids)
        if batch_size is None:
            return total


def _redact_deliveries(deliveries) -> None:
    """Replace the bodies and the receivers' answers of `deliveries`; what was not sent yet is
    skipped (an erased person's data is not sent after the erasure)."""
    now = timezone.now()
    deliveries.filter(status=Delivery.Status.PENDING).update(
        status=Delivery.Status.SKIPPED, next_attempt_at=None, last_error="contact erased", updated_at=now
    )
    deliveries.update(body=REDACTED_BODY, payload=REDACTED, updated_at=now)
    Attempt.objects.filter(delivery__in=deliveries.values("pk")).update(response_excerpt="")


# --- retention -------------------------------------------------------------------------------------


def erase_expired_chats(*, now: datetime | None = None, batch_size: int = BATCH) -> dict[str, int]:
    """The nightly job: for every widget with a retention window, erase the chats whose last message
    is older than the window, `batch_size` chats a query and messages a transaction. Logs counts."""
    now = now or timezone.now()
    counts: Counter[str] = Counter()
    for policy in RetentionPolicy.objects.filter(chats_days__isnull=False).order_by("pk").iterator():
        cutoff = now - timedelta(days=policy.chats_days)
        after = 0
        while True:
            chat_ids = list(
                Chat.objects.filter(widget_id=policy.widget_id, last_message_at__lt=cutoff, pk__gt=after)
                .order_by("pk")
                .values_list("pk", flat=True)[:batch_size]
            )
            if not chat_ids:
                break
            after = chat_ids[-1]
            for chat_id in chat_ids:
                counts += erase_chat(widget_id=policy.widget_id, chat_id=chat_id, cutoff=cutoff, batch_size=batch_size)
    logger.info("retention: expired chats erased", extra=dict(counts))
    return dict(counts)


def erase_chat(*, widget_id: int, chat_id: int, cutoff: datetime, batch_size: int = BATCH) -> Counter[str]:
    """Erase one chat whose last message is older than `cutoff` (the erasure's steps, for one
    chat). A chat written to after `cutoff` meanwhile keeps its newer messages and stays."""
    counts: Counter[str] = Counter()
    counts += _delete_messages(widget_id=widget_id, chat_id=chat_id, batch_size=batch_size, before=cutoff)
    counts["webhook_events"] += _redact_webhook_log(
        widget_id=widget_id, guid=None, chat_ids=[chat_id], batch_size=batch_size
    )
    with transaction.atomic():
        chat = Chat.objects.select_for_update().filter(pk=chat_id, widget_id=widget_id).first()
        if chat is None or chat.last_message_at is None or chat.last_message_at >= cutoff:
            return counts
        # every message is older than the cutoff now (the chat's last one is)
        counts += _delete_messages(widget_id=widget_id, chat_id=chat_id, batch_size=None, before=cutoff)
        counts["webhook_events"] += _redact_webhook_log(
            widget_id=widget_id, guid=None, chat_ids=[chat_id], batch_size=None
        )
        chat.delete()
        counts["chats"] += 1
    return counts


@transaction.atomic
def set_retention(*, widget: Widget, chats_days: int | None) -> RetentionPolicy:
    """Set the widget's chat retention window (None keeps chats for good); audited. A window outside
    RETENTION_MIN_DAYS..RETENTION_MAX_DAYS is a ValueError: the API and admin refuse it first."""
    if chats_days is not None and not RETENTION_MIN_DAYS <= chats_days <= RETENTION_MAX_DAYS:
        raise ValueError(f"chats_days must be null or {RETENTION_MIN_DAYS} to {RETENTION_MAX_DAYS}")
    policy, _ = RetentionPolicy.objects.select_for_update().get_or_create(widget=widget)
    if policy.chats_days != chats_days:
        record(
            widget=widget,
            action="retention.changed",
            target_type="widget",
            target_id=widget.button_guid,
            changes={"chats_days": {"from": policy.chats_days, "to": chats_days}},
        )
        policy.chats_days = chats_days
        policy.updated_at = timezone.now()
        policy.save(update_fields=["chats_days", "updated_at"])
    return policy


def get_retention(*, widget: Widget) -> int | None:
    return RetentionPolicy.objects.filter(widget=widget).values_list("chats_days", flat=True).first()
