"""Redelivery and the delivery log: a logged delivery's event sent again (a new X-Service-Delivery,
the same idempotency key) in the envelope the subscription uses now."""

from __future__ import annotations

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from apps.core.errors import ValidationFailed
from apps.core.models import Widget

from . import catalogue, delivery, payloads
from .models import Delivery, Subscription


class NotRedeliverable(ValidationFailed):
    """This delivery cannot be redelivered to the subscription as it is now."""

    code, title = "not_redeliverable", "Delivery is not redeliverable"


def redeliver(*, widget: Widget, subscription: Subscription, delivery_id) -> Delivery:
    """Re-send a logged delivery's event with a new X-Service-Delivery and the same idempotency key,
    in the envelope the subscription uses now."""
    original = (
        Delivery.objects.select_related("event")
        .filter(widget=widget, subscription=subscription, delivery_id=delivery_id)
        .first()
    )
    if original is None or not is_redeliverable(original, subscription):
        if original is None:
            raise ValidationFailed(errors={"delivery_id": ["No such delivery of this subscription."]})
        raise NotRedeliverable(
            "This delivery cannot be redelivered in the subscription's current envelope.",
            errors={"delivery_id": ["Not redeliverable."]},
        )
    envelope = "legacy" if subscription.is_legacy_compat else "native"
    body = payloads.render(original.event, envelope)
    now = timezone.now()
    with transaction.atomic():
        copy = Delivery.objects.create(
            widget=widget,
            subscription=subscription,
            event=original.event,
            event_type=original.event_type,
            envelope=envelope,
            status=Delivery.Status.PENDING,
            body=body.decode(),
            payload=payloads.log_payload(body),
            next_attempt_at=now,
            redelivery_of=original,
        )
        transaction.on_commit(delivery.trigger)
    return copy


def is_redeliverable(delivery: Delivery, subscription: Subscription) -> bool:
    """Rows logged in the legacy envelope (final failures) never are; a pending row is still on its
    way; while the subscription is legacy, only events with a legacy equivalent can go again."""
    if delivery.envelope == Delivery.Envelope.LEGACY or delivery.status == Delivery.Status.PENDING:
        return False
    if subscription.is_legacy_compat:
        return delivery.event_type in catalogue.NATIVE_TO_LEGACY
    return True


def log_rows(subscription: Subscription):
    """The delivery log: native rows over their whole lifecycle; legacy rows only as final failures."""
    return Delivery.objects.filter(widget_id=subscription.widget_id, subscription=subscription).filter(
        Q(envelope=Delivery.Envelope.NATIVE) | Q(envelope=Delivery.Envelope.LEGACY, status=Delivery.Status.FAILED)
    )
