"""Delivery targets owned by higher apps (`Endpoint`): an external operator's URL is one. The owner
creates the endpoint, enqueues signed calls to it, holds, releases or drops its queue, rotates its
secret with an overlap window and reads what is still undelivered; the engine
(apps.webhooks.delivery) sends the rows exactly as it sends a subscription's."""

from __future__ import annotations

import uuid
from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from apps.core.crypto import encrypt_secret
from apps.core.errors import ValidationFailed
from apps.core.models import Widget

from . import delivery, payloads
from .models import Delivery, Endpoint


def create_endpoint(*, widget: Widget, owner: str, owner_id: int, url: str, secret_encrypted: str) -> Endpoint:
    """A new target; the caller checked `url` against the address policy (check_destination)."""
    return Endpoint.objects.create(
        widget=widget, owner=owner, owner_id=owner_id, url=url, secret_encrypted=secret_encrypted
    )


def enqueue_call(
    *, endpoint: Endpoint, event_type: str, body: bytes, key: uuid.UUID, message_id: int | None = None
) -> Delivery:
    """One signed POST of `body` to the endpoint (`key` is its idempotency key and body `id`), sent
    after the caller's transaction commits; a held endpoint keeps it pending until released. With
    `message_id`, the call is deleted with that message (it carries the message's text)."""
    now = timezone.now()
    row = Delivery.objects.create(
        widget_id=endpoint.widget_id,
        endpoint=endpoint,
        key=key,
        message_id=message_id,
        event_type=event_type,
        status=Delivery.Status.PENDING,
        body=body.decode(),
        payload=payloads.log_payload(body),
        next_attempt_at=None if endpoint.mode == Endpoint.Mode.HOLD else now,
    )
    transaction.on_commit(delivery.sweep.trigger)
    return row


def set_endpoint_mode(*, endpoint: Endpoint, mode: str, reason: str = "endpoint_dropped") -> Endpoint:
    """`hold` parks the queue (rows stay pending, unsent), `send` releases it at once, `drop` skips
    every pending row now: a row an engine leased in the instant before is skipped when loaded."""
    Endpoint.objects.filter(pk=endpoint.pk).update(mode=mode, updated_at=timezone.now())
    endpoint.mode = mode
    pending = Delivery.objects.filter(widget_id=endpoint.widget_id, endpoint=endpoint, status=Delivery.Status.PENDING)
    if mode == Endpoint.Mode.DROP:
        delivery.skip_endpoint_rows(pending, reason=reason)
    elif mode == Endpoint.Mode.HOLD:
        pending.update(next_attempt_at=None)  # one an engine leased meanwhile is parked when loaded
    elif mode == Endpoint.Mode.SEND:
        if pending.filter(next_attempt_at=None).update(next_attempt_at=timezone.now()):
            transaction.on_commit(delivery.sweep.trigger)
    return endpoint


def rotate_endpoint_secrets(*, endpoints: list[Endpoint], secret: str, overlap: timedelta) -> None:
    """The new secret signs every attempt from now on; the current one keeps signing beside it
    (`X-Service-Signature-Previous`) until `overlap` has passed."""
    now = timezone.now()
    token = encrypt_secret(secret)
    for endpoint in endpoints:
        Endpoint.objects.filter(pk=endpoint.pk).update(
            previous_secret_encrypted=endpoint.secret_encrypted,
            previous_secret_until=now + overlap,
            secret_encrypted=token,
            updated_at=now,
        )


def pending_count(endpoint: Endpoint) -> int:
    return Delivery.objects.filter(
        widget_id=endpoint.widget_id, endpoint=endpoint, status=Delivery.Status.PENDING
    ).count()


def abandon_pending(*, endpoint: Endpoint, reason: str) -> int:
    """Skip the endpoint's undelivered rows (never sent again). Returns how many."""
    return delivery.skip_endpoint_rows(
        Delivery.objects.filter(widget_id=endpoint.widget_id, endpoint=endpoint), reason=reason
    )


def redeliver_endpoint_call(*, widget: Widget, original: Delivery) -> Delivery:
    """Send a settled call again: the stored bytes, the same idempotency key, a new
    X-Service-Delivery. A pending row is still on its way (422); a dropped endpoint takes none. The
    copy names the original's message, so it is deleted with that message as the original is."""
    if original.widget_id != widget.pk or original.endpoint_id is None:
        raise ValidationFailed(errors={"delivery_id": ["No such delivery."]})
    if original.status == Delivery.Status.PENDING:
        raise ValidationFailed(errors={"delivery_id": ["Still pending."]})
    endpoint = original.endpoint
    if endpoint.mode == Endpoint.Mode.DROP:
        raise ValidationFailed(errors={"delivery_id": ["The endpoint takes no deliveries any more."]})
    with transaction.atomic():
        copy = Delivery.objects.create(
            widget=widget,
            endpoint=endpoint,
            key=original.key,
            message_id=original.message_id,
            event_type=original.event_type,
            status=Delivery.Status.PENDING,
            body=original.body,
            payload=original.payload,
            next_attempt_at=None if endpoint.mode == Endpoint.Mode.HOLD else timezone.now(),
            redelivery_of=original,
        )
        transaction.on_commit(delivery.sweep.trigger)
    return copy


def set_endpoint_owner(*, endpoint: Endpoint, owner_id: int) -> None:
    """Name the owner's row once it exists (an owner that points at its endpoint creates it first)."""
    Endpoint.objects.filter(pk=endpoint.pk).update(owner_id=owner_id)
    endpoint.owner_id = owner_id


def set_endpoint_url(*, endpoint: Endpoint, url: str) -> None:
    """Send to `url` from the next attempt on, retries of queued rows included; the caller checked
    it against the address policy (check_destination)."""
    Endpoint.objects.filter(pk=endpoint.pk).update(url=url, updated_at=timezone.now())
    endpoint.url = url


def replace_endpoint_secret(*, endpoint: Endpoint, secret: str) -> None:
    """`secret` signs every attempt from now on, alone: the old one stops at once (no overlap)."""
    token = encrypt_secret(secret)
    Endpoint.objects.filter(pk=endpoint.pk).update(
        secret_encrypted=token, previous_secret_encrypted="", previous_secret_until=None, updated_at=timezone.now()
    )
    endpoint.secret_encrypted, endpoint.previous_secret_encrypted, endpoint.previous_secret_until = token, "", None
