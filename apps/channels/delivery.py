"""The outbound sender of channel messages: the webhook engine's policy (4 attempts, waits of
10, 20 and 40 s, 15 s per attempt, redirects never followed) over the same guarded client, with the
same log (OutboundDelivery rows and one OutboundAttempt per attempt).

The rows are the source of truth. `deliver_due` leases due rows (moves `next_attempt_at` a lease
ahead), sends them, and records each attempt; the beat sweeper re-drives due rows, so a lost Celery
message or a killed worker only delays a message. A provider's 429 with `Retry-After` waits at least
that long before the next attempt.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timedelta

from celery import current_app
from django.db import transaction
from django.utils import timezone

from apps.core import crypto, metrics, outbound
from apps.core.numbers import parse_int
from apps.webhooks import services as webhooks

from .models import OutboundAttempt, OutboundDelivery
from .providers import registry
from .providers.base import Credential, Provider

logger = logging.getLogger(__name__)

MAX_ATTEMPTS = webhooks.MAX_ATTEMPTS
TIMEOUT = webhooks.TIMEOUT
ATTEMPT_DEADLINE = webhooks.ATTEMPT_DEADLINE
RESPONSE_CAP = webhooks.RESPONSE_CAP
LEASE = timedelta(seconds=ATTEMPT_DEADLINE * 6)
MAX_RETRY_AFTER = 3600  # a provider asking for more is waited for this long
DELIVER_TASK = "apps.channels.tasks.deliver_due"


def retry_wait(failed_attempt: int) -> int:
    return webhooks.retry_wait(failed_attempt)


def trigger(countdown: float | None = None) -> None:
    """Ask a worker to run `deliver_due` (by its registered name). Best effort: the sweeper
    re-drives due rows, so a lost trigger only delays them."""
    try:
        task = current_app.tasks[DELIVER_TASK]
        if countdown:
            task.apply_async(countdown=countdown)
        else:
            task.delay()
    except Exception:
        logger.warning("channel delivery trigger failed; the sweeper will pick the rows up")


def _lease(batch_size: int) -> list[int]:
    now = timezone.now()
    with transaction.atomic():
        ids = list(
            OutboundDelivery.objects.select_for_update(skip_locked=True)
            .filter(status=OutboundDelivery.Status.PENDING, next_attempt_at__lte=now)
            .order_by("next_attempt_at")
            .values_list("pk", flat=True)[:batch_size]
        )
        if ids:
            OutboundDelivery.objects.filter(pk__in=ids).update(next_attempt_at=now + LEASE)
    return ids


_local = threading.local()


def _session() -> outbound.GuardedSession:
    session = getattr(_local, "session", None)
    if session is None:
        session = _local.session = outbound.get_session()
    return session


@dataclass
class Request:
    """What one attempt sends, built when the attempt runs (secrets read then, so a key rotation
    or a new credential reaches retries)."""

    url: str
    body: bytes
    headers: dict[str, str]


class PermanentFailure(Exception):
    """Nothing to send to any more (channel gone or disabled, credential missing)."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


@dataclass
class Outcome:
    delivery: OutboundDelivery
    started: datetime
    duration_ms: int
    status_code: int | None
    error: str
    permanent: bool
    retry_after: int | None = None


def signed_request(*, url: str, secret: str, body: bytes, event_id: str, delivery_id: str) -> Request:
    """The webhook headers over `body` (both signatures, idempotency key = the body's id)."""
    ts = int(time.time())
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "ChatWidgetService-Channels/1",
        "X-Service-Event": "message.created",
        "X-Service-Signature": webhooks.service_signature(secret, body),
        "X-Service-Idempotency-Key": event_id,
        "X-Service-Delivery": delivery_id,
        "X-Service-Timestamp": str(ts),
        "webhook-id": event_id,
        "webhook-timestamp": str(ts),
        "webhook-signature": webhooks.standard_signature(secret, event_id, ts, body),
    }
    return Request(url=url, body=body, headers=headers)


class Credentials:
    """Decrypted credentials of one batch, read once per (widget, provider, account): a batch of
    sends to one messenger makes one query and one decryption, not one per message."""

    def __init__(self) -> None:
        self._read: dict[tuple[int, str, str], Credential | None] = {}

    def get(self, provider: Provider, widget_id: int, stored: dict) -> Credential | None:
        """The credential that sends `stored`, or None when not connected."""
        key = (widget_id, provider.code, provider.account_key(stored))
        if key not in self._read:
            self._read[key] = provider.load_credential(widget_id, key[2])
        return self._read[key]


def _build_messenger(provider: Provider, delivery: OutboundDelivery, creds: Credentials) -> Request:
    """A provider's send call: the stored body with the credential read now."""
    stored = json.loads(delivery.body)
    cred = creds.get(provider, delivery.widget_id, stored)
    if cred is None:
        raise PermanentFailure("not_connected")
    sent = provider.delivery_request(cred, stored, delivery_id=delivery.pk)
    headers = {"User-Agent": "ChatWidgetService-Channels/1", **sent.headers}
    return Request(url=sent.url, body=sent.body, headers=headers)


def _build(delivery: OutboundDelivery, creds: Credentials) -> Request:
    provider = registry.get(delivery.channel)
    if provider is not None:
        return _build_messenger(provider, delivery, creds)
    channel = delivery.custom_channel
    if channel is None or not channel.is_active:
        raise PermanentFailure("channel_inactive")
    secret = crypto.decrypt_secret(channel.secret_encrypted)
    if secret is None:
        raise PermanentFailure("missing_secret")
    return signed_request(
        url=channel.url,
        secret=secret,
        body=delivery.body.encode(),
        event_id=str(delivery.event_id),
        delivery_id=str(delivery.event_id),
    )


def _retry_after(response) -> int | None:
    if response.status_code != 429:
        return None
    try:
        value = parse_int(response.headers.get("Retry-After"), maximum=10**9)
    except ValueError:
        try:  # Telegram says it in the body: {"parameters": {"retry_after": N}}
            value = json.loads(response.content)["parameters"]["retry_after"]
        except (ValueError, KeyError, TypeError):
            return None
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            return None
    return min(value, MAX_RETRY_AFTER)


def _send(delivery: OutboundDelivery, creds: Credentials | None = None) -> Outcome:
    started, clock = timezone.now(), time.monotonic()
    status_code, error, permanent, retry_after = None, "", False, None
    try:
        req = _build(delivery, creds or Credentials())
        response = _session().send_bytes(
            "POST",
            req.url,
            body=req.body,
            headers=req.headers,
            timeout=TIMEOUT,
            max_bytes=RESPONSE_CAP,
            deadline=ATTEMPT_DEADLINE,
        )
        status_code = response.status_code
        provider = registry.get(delivery.channel)
        if provider is not None:
            # the provider's verdict: its refusal of the request itself (bad chat, bot blocked) is final
            error, permanent = provider.send_error(status_code, response.content)
            retry_after = _retry_after(response)
        elif not 200 <= status_code < 300:
            error = f"http_{status_code}"
            retry_after = _retry_after(response)
    except PermanentFailure as exc:
        error, permanent = exc.reason, True
    except outbound.OutboundBlocked as exc:
        error, permanent = f"blocked:{exc.reason}", True
    except outbound.OutboundError as exc:
        error = exc.reason
    duration = int((time.monotonic() - clock) * 1000)
    return Outcome(delivery, started, duration, status_code, error[:200], permanent, retry_after)


def _record(outcomes: list[Outcome]) -> list[str]:
    """The attempts of a batch in one transaction: a row moves only if it is still the pending row
    that was sent (same attempt count, checked under lock), so a row changed meanwhile (deleted,
    failed by hand) is left alone ("gone"). Rows with the same outcome move in one UPDATE (a batch
    that went through is one statement). Returns the new statuses, in order."""
    if not outcomes:
        return []
    now = timezone.now()
    statuses, rows, waits = [], [], []
    groups: dict[tuple, list[int]] = {}
    with transaction.atomic():
        current = {
            pk: (status, attempts)
            for pk, status, attempts in OutboundDelivery.objects.select_for_update()
            .filter(pk__in=[o.delivery.pk for o in outcomes])
            .values_list("pk", "status", "attempts")
        }
        for outcome in outcomes:
            delivery = outcome.delivery
            if current.get(delivery.pk) != (OutboundDelivery.Status.PENDING, delivery.attempts):
                statuses.append("gone")
                continue
            number = delivery.attempts + 1
            wait = None
            if not outcome.error:
                status, next_at = OutboundDelivery.Status.DELIVERED, None
            elif outcome.permanent or number >= MAX_ATTEMPTS:
                status, next_at = OutboundDelivery.Status.FAILED, None
            else:
                wait = max(retry_wait(number), outcome.retry_after or 0)
                status, next_at = OutboundDelivery.Status.PENDING, now + timedelta(seconds=wait)
            groups.setdefault((status, number, next_at, outcome.status_code, outcome.error), []).append(delivery.pk)
            rows.append(
                OutboundAttempt(
                    delivery_id=delivery.pk,
                    number=number,
                    started_at=outcome.started,
                    duration_ms=outcome.duration_ms,
                    status_code=outcome.status_code,
                    error=outcome.error,
                )
            )
            statuses.append(status)
            if wait is not None:
                waits.append(wait)
        for (status, number, next_at, status_code, error), pks in groups.items():
            OutboundDelivery.objects.filter(pk__in=pks).update(
                status=status,
                attempts=number,
                next_attempt_at=next_at,
                last_status_code=status_code,
                last_error=error,
                updated_at=now,
            )
        OutboundAttempt.objects.bulk_create(rows)
    metrics.count_delivery_attempts("channel", statuses)
    for wait in sorted(set(waits)):
        trigger(countdown=wait)
    return statuses


def attempt(delivery_pk: int) -> str:
    """One attempt of one delivery, inline (tests, the sender loop). Returns the new status."""
    delivery = OutboundDelivery.objects.select_related("custom_channel").filter(pk=delivery_pk).first()
    if delivery is None or delivery.status != OutboundDelivery.Status.PENDING:
        return "gone"
    return _record([_send(delivery)])[0]


def deliver_due(*, max_seconds: float = 50.0, batch_size: int = 32) -> int:
    """Send due deliveries until none is due or `max_seconds` have passed. Returns the number of
    attempts made. A leased batch is read in one query, its credentials once per messenger, sent in
    order (a chat's messages keep their order) and recorded in one transaction; rows not reached
    before the time budget go back to due."""
    deadline = time.monotonic() + max_seconds
    done = 0
    while time.monotonic() < deadline:
        ids = _lease(batch_size)
        if not ids:
            break
        batch = OutboundDelivery.objects.select_related("custom_channel").filter(
            pk__in=ids, status=OutboundDelivery.Status.PENDING
        )
        by_id = {d.pk: d for d in batch}
        creds, outcomes = Credentials(), []
        for position, pk in enumerate(ids):
            if time.monotonic() >= deadline:
                OutboundDelivery.objects.filter(pk__in=ids[position:], status="pending").update(
                    next_attempt_at=timezone.now()
                )
                break
            if pk in by_id:
                outcomes.append(_send(by_id[pk], creds))
        _record(outcomes)
        done += len(outcomes)
    return done


def has_due() -> bool:
    return OutboundDelivery.objects.filter(
        status=OutboundDelivery.Status.PENDING, next_attempt_at__lte=timezone.now()
    ).exists()
