"""Fan-out: the outbox handler (registered in WebhooksConfig.ready()) that turns a batch of public
events into Delivery rows, one per event and matching active endpoint, in the outbox transaction.
The rows are the source of truth of the delivery engine (apps.webhooks.delivery); once they are
committed, the same process attempts them at once (`delivery.send_new`)."""

from __future__ import annotations

import operator
from functools import partial, reduce

from django.db import DEFAULT_DB_ALIAS, transaction
from django.db.models import Q
from django.utils import timezone

from apps.core.models import OutboxEvent
from apps.core.statements import Slot, Statement

from . import catalogue, delivery, payloads
from .models import Delivery, Subscription


def _envelope_for(sub: Subscription, event_type: str) -> str | None:
    if sub.is_legacy_compat:
        legacy = catalogue.NATIVE_TO_LEGACY.get(event_type)
        return "legacy" if legacy and legacy in sub.events else None
    return "native" if event_type in sub.events else None


_SUBSCRIPTION_COLUMNS = tuple(f.attname for f in Subscription._meta.concrete_fields)


def _active_subscriptions(widgets: int):
    """The active subscriptions of `widgets` widgets (slots w0, w1, ...)."""
    widget = Subscription._meta.get_field("widget")
    # one `widget_id = slot` per widget, ORed (a related `__in` prepares its values before a slot is bound)
    any_widget = reduce(operator.or_, (Q(widget_id=Slot(f"w{n}", widget)) for n in range(widgets)))
    return Subscription.objects.filter(any_widget, is_active=True).values(*_SUBSCRIPTION_COLUMNS)


# Compiled once per number of widgets (apps.core.statements): building and compiling this query
# through the ORM would be a large part of the time from an event's commit to its first webhook request.
_SUBSCRIPTIONS = Statement(_active_subscriptions)


def _subscriptions(events: list[OutboxEvent]) -> list[Subscription]:
    """The active subscriptions of the events' widgets."""
    widget_ids = sorted({event.widget_id for event in events})
    rows = _SUBSCRIPTIONS.tuples((len(widget_ids),), **{f"w{n}": pk for n, pk in enumerate(widget_ids)})
    return [Subscription.from_db(DEFAULT_DB_ALIAS, _SUBSCRIPTION_COLUMNS, row) for row in rows]


def fan_out_events(events: list[OutboxEvent]) -> int:
    """The outbox handler: one delivery per event and matching active endpoint, written in one
    INSERT that skips the endpoints already holding the event's delivery (fan-out may run twice).
    Once the transaction commits, this process attempts the new due rows at once (`send_new`: no
    trigger, task or lease cycle between commit and the first attempt). Returns the number of
    deliveries due to be sent."""
    by_widget: dict[int, list[Subscription]] = {}
    for sub in _subscriptions(events):
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
