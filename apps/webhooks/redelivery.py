"""Redelivery and the delivery log: a logged delivery's event sent again (a new X-Service-Delivery,
the same idempotency key) in the envelope the subscription uses now."""

from __future__ import annotations

from django.db import transaction
from django.db.models import Prefetch, Q
from django.utils import timezone

from apps.core.errors import ValidationFailed
from apps.core.models import Widget

from . import catalogue, delivery, payloads
from .models import Attempt, Delivery, Subscription


class NotRedeliverable(ValidationFailed):
    """This delivery cannot be redelivered to the subscription as it is now."""

    code, title = "not_redeliverable", "Delivery is not redeliverable"


@transaction.atomic
def redeliver(*, widget: Widget, subscription: Subscription, delivery_id) -> Delivery:
    """Re-send a logged delivery's event with a new X-Service-Delivery and the same idempotency key,
    in the envelope the subscription uses now. The original is locked until the copy is written: a
    row the retention job (apps.webhooks.retention) is deleting meanwhile answers as an unknown one
    once that deletion commits."""
    original = (
        Delivery.objects.select_related("event")
        .select_for_update(of=("self",))
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
    transaction.on_commit(delivery.sweep.trigger)
    return copy


def is_redeliverable(delivery: Delivery, subscription: Subscription) -> bool:
    """Rows logged in the legacy envelope (final failures) and rows an erasure redacted never are; a
    pending row is still on its way; while the subscription is legacy, only events with a legacy
    equivalent can go again."""
    if delivery.envelope == Delivery.Envelope.LEGACY or delivery.status == Delivery.Status.PENDING:
        return False
    if delivery.payload == {"erased": True}:  # redacted by an erasure (apps.privacy): nothing to send again
        return False
    if subscription.is_legacy_compat:
        return delivery.event_type in catalogue.NATIVE_TO_LEGACY
    return True


def log_rows(subscription: Subscription):
    """The delivery log: native rows over their whole lifecycle; legacy rows only as final failures.
    Each row's attempts come with it (one query for a page's attempts, whatever its size)."""
    return (
        Delivery.objects.filter(widget_id=subscription.widget_id, subscription=subscription)
        .filter(
            Q(envelope=Delivery.Envelope.NATIVE) | Q(envelope=Delivery.Envelope.LEGACY, status=Delivery.Status.FAILED)
        )
        .defer("body")
        .prefetch_related(Prefetch("attempt_rows", queryset=Attempt.objects.order_by("number")))
    )


# What the log shows as an attempt's `outcome`: `delivered` (2xx), `http_error` (any other status,
# redirects included), `blocked` (the destination is refused: permanent), else the transport reason.
OUTCOMES = (
    "delivered",
    "http_error",
    "timeout",
    "deadline_exceeded",
    "tls_error",
    "connection_error",
    "resolve_failed",
    "invalid_response",
    "response_too_large",
    "request_failed",
    "blocked",
    "missing_secret",
)


def attempt_outcome(error: str) -> str:
    if not error:
        return "delivered"
    if error.startswith("http_"):
        return "http_error"
    if error.startswith("blocked:"):
        return "blocked"
    return error if error in OUTCOMES else "request_failed"


def log_row(row: Delivery, subscription: Subscription) -> dict:
    """One delivery as the log shows it: its state, every attempt made, and when the next is due."""
    attempts = list(row.attempt_rows.all())
    return {
        "delivery_id": str(row.delivery_id),
        "status": row.status,
        "event_type": row.event_type,
        "payload": row.payload,
        "is_redeliverable": is_redeliverable(row, subscription),
        "attempts": row.attempts,
        "attempt_log": [
            {
                "number": a.number,
                "at": a.started_at.isoformat(),
                "outcome": attempt_outcome(a.error),
                "error": a.error or None,
                "status_code": a.status_code,
                "duration_ms": a.duration_ms,
                "response_excerpt": a.response_excerpt or None,
            }
            for a in attempts
        ],
        "next_attempt_at": (
            row.next_attempt_at.isoformat()
            if row.status == Delivery.Status.PENDING and row.next_attempt_at is not None
            else None
        ),
        "created_at": row.created_at.isoformat(),
    }
