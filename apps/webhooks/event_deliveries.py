"""Fan-out: the outbox handler (registered in WebhooksConfig.ready()) that turns a batch of public
events into Delivery rows, one per event and matching active endpoint, in the outbox transaction.
The rows are the source of truth of the delivery engine (apps.webhooks.delivery); once they are
committed, the same process attempts them at once (`delivery.send_new`)."""

from __future__ import annotations

from functools import partial

from django.db import transaction
from django.utils import timezone

from apps.core.models import OutboxEvent

from . import catalogue, delivery, payloads, selectors
from .models import Delivery, Subscription


def _envelope_for(sub: Subscription, event_type: str) -> str | None:
    if sub.is_legacy_compat:
        legacy = catalogue.NATIVE_TO_LEGACY.get(event_type)
        return "legacy" if legacy and legacy in sub.events else None
    return "native" if event_type in sub.events else None


def fan_out_events(events: list[OutboxEvent]) -> int:
    """The outbox handler: one delivery per event and matching active endpoint, written in one
    INSERT that skips the endpoints already holding the event's delivery (fan-out may run twice).
    Once the transaction commits, this process attempts the new due rows at once (`send_new`: no
    trigger, task or lease cycle between commit and the first attempt). Returns the number of
    deliveries due to be sent."""
    by_widget: dict[int, list[Subscription]] = {}
    for sub in selectors.list_active_subscriptions(widget_ids={event.widget_id for event in events}):
        by_widget.setdefault(sub.widget_id, []).append(sub)
    if not by_widget:
        return 0
    enabled_types: set[str] | None = None
    now = timezone.now()
    rows, due = [], 0
    for event in events:
        rendered: dict[str, tuple[bytes, dict] | None] = {}  # one body and log copy per envelope
        for sub in by_widget.get(event.widget_id, ()):
            envelope = _envelope_for(sub, event.type)
            if envelope is None:
                continue
            if envelope not in rendered:
                body = payloads.render(event, envelope)
                rendered[envelope] = None if body is None else (body, payloads.log_payload(body))
            if rendered[envelope] is None:
                continue
            body, logged = rendered[envelope]
            if enabled_types is None:  # read once, and only when some endpoint matches
                enabled_types = catalogue.enabled_types()
            enabled = event.type in enabled_types
            due += enabled
            rows.append(
                Delivery(
                    subscription=sub,
                    event=event,
                    widget_id=event.widget_id,
                    event_type=event.type,
                    envelope=envelope,
                    status=Delivery.Status.PENDING if enabled else Delivery.Status.SKIPPED,
                    body=body.decode(),
                    payload=logged,
                    next_attempt_at=now if enabled else None,
                )
            )
    # The unique (subscription, event) row of an earlier run stays as it is (conflicts are skipped);
    # send_new leases the rows by their delivery ids and leaves a row that is no longer due alone.
    Delivery.objects.bulk_create(rows, ignore_conflicts=True, batch_size=500)
    if due:
        transaction.on_commit(partial(delivery.send_new, rows))
    return due
