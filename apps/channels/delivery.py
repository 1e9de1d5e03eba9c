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

from apps.core import outbound
from apps.core.numbers import parse_int
from apps.webhooks import services as webhooks

from .models import MessengerConnection, OutboundAttempt, OutboundDelivery, VkCommunity
from .providers import registry

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


def _build_telegram(delivery: OutboundDelivery) -> Request:
    from .providers import telegram

    conn = MessengerConnection.objects.filter(widget_id=delivery.widget_id, provider="tg").first()
    token = webhooks.decrypt_secret(conn.token_encrypted) if conn is not None else None
    if not token:
        raise PermanentFailure("not_connected")
    return Request(
        url=telegram.method_url(token, "sendMessage"),
        body=delivery.body.encode(),
        headers={"Content-Type": "application/json", "User-Agent": "ChatWidgetService-Channels/1"},
    )


def _build_vk(delivery: OutboundDelivery) -> Request:
    from urllib.parse import urlencode

    from django.conf import settings

    from .providers import vk

    data = json.loads(delivery.body)
    community = VkCommunity.objects.filter(widget_id=delivery.widget_id, community_id=data["community_id"]).first()
    token = webhooks.decrypt_secret(community.token_encrypted) if community is not None else None
    if not token:
        raise PermanentFailure("not_connected")
    form = vk.send_message_form(peer_id=data["peer_id"], text=data["message"], random_id=delivery.pk)
    form |= {"access_token": token, "v": vk.API_VERSION}
    return Request(
        url=f"{settings.PROVIDER_API_BASE_VK.rstrip('/')}/method/messages.send",
        body=urlencode(form).encode(),
        headers={"Content-Type": "application/x-www-form-urlencoded", "User-Agent": "ChatWidgetService-Channels/1"},
    )


def _vk_error(content: bytes) -> str:
    """VK answers errors with HTTP 200 and `{"error": {...}}`."""
    try:
        data = json.loads(content)
    except ValueError:
        return "vk_invalid_answer"
    if isinstance(data, dict) and isinstance(data.get("error"), dict):
        return f"vk_error_{data['error'].get('error_code')}"
    return "" if isinstance(data, dict) and "response" in data else "vk_invalid_answer"


def _build_messenger(delivery: OutboundDelivery) -> Request:
    """A generic provider's send call: the stored payload with the credential read now."""
    from .messengers import credential

    conn = MessengerConnection.objects.filter(widget_id=delivery.widget_id, provider=delivery.channel).first()
    cred = credential(conn) if conn is not None else None
    if cred is None:
        raise PermanentFailure("not_connected")
    sent = registry.get(delivery.channel).send_request(cred, json.loads(delivery.body))
    headers = {"User-Agent": "ChatWidgetService-Channels/1", **sent.headers}
    return Request(url=sent.url, body=sent.body, headers=headers)


def _build(delivery: OutboundDelivery) -> Request:
    if delivery.channel == "tg":
        return _build_telegram(delivery)
    if registry.get(delivery.channel) is not None:
        return _build_messenger(delivery)
    if delivery.channel == "vk":
        return _build_vk(delivery)
    channel = delivery.custom_channel
    if channel is None or not channel.is_active:
        raise PermanentFailure("channel_inactive")
    secret = webhooks.decrypt_secret(channel.secret_encrypted)
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


def _send(delivery: OutboundDelivery) -> Outcome:
    started, clock = timezone.now(), time.monotonic()
    status_code, error, permanent, retry_after = None, "", False, None
    try:
        req = _build(delivery)
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
            error, permanent = provider.send_error(status_code, response.content)
            retry_after = _retry_after(response)
        elif not 200 <= status_code < 300:
            error = f"http_{status_code}"
            retry_after = _retry_after(response)
            # A provider's refusal of the request itself (bad chat, bot blocked) will not change.
            permanent = delivery.channel == "tg" and 400 <= status_code < 500 and status_code not in (408, 429)
        elif delivery.channel == "vk":
            error = _vk_error(response.content)
    except PermanentFailure as exc:
        error, permanent = exc.reason, True
    except outbound.OutboundBlocked as exc:
        error, permanent = f"blocked:{exc.reason}", True
    except outbound.OutboundError as exc:
        error = exc.reason
    duration = int((time.monotonic() - clock) * 1000)
    return Outcome(delivery, started, duration, status_code, error[:200], permanent, retry_after)


def _record(outcome: Outcome) -> str:
    now = timezone.now()
    delivery = outcome.delivery
    with transaction.atomic():
        current = OutboundDelivery.objects.select_for_update().filter(pk=delivery.pk).first()
        if current is None or current.status != OutboundDelivery.Status.PENDING:
            return "gone"
        number = current.attempts + 1
        wait = None
        if not outcome.error:
            status, next_at = OutboundDelivery.Status.DELIVERED, None
        elif outcome.permanent or number >= MAX_ATTEMPTS:
            status, next_at = OutboundDelivery.Status.FAILED, None
        else:
            wait = max(retry_wait(number), outcome.retry_after or 0)
            status, next_at = OutboundDelivery.Status.PENDING, now + timedelta(seconds=wait)
        OutboundAttempt.objects.create(
            delivery=current,
            number=number,
            started_at=outcome.started,
            duration_ms=outcome.duration_ms,
            status_code=outcome.status_code,
            error=outcome.error,
        )
        OutboundDelivery.objects.filter(pk=current.pk).update(
            status=status,
            attempts=number,
            next_attempt_at=next_at,
            last_status_code=outcome.status_code,
            last_error=outcome.error,
            updated_at=now,
        )
    if wait is not None:
        trigger(countdown=wait)
    return status


def attempt(delivery_pk: int) -> str:
    """One attempt of one delivery, inline (tests, the sender loop). Returns the new status."""
    delivery = OutboundDelivery.objects.select_related("custom_channel").filter(pk=delivery_pk).first()
    if delivery is None or delivery.status != OutboundDelivery.Status.PENDING:
        return "gone"
    return _record(_send(delivery))


def deliver_due(*, max_seconds: float = 50.0, batch_size: int = 32) -> int:
    """Send due deliveries until none is due or `max_seconds` have passed. Returns the number of
    attempts made. Leased rows not reached before the time budget go back to due."""
    deadline = time.monotonic() + max_seconds
    done = 0
    while time.monotonic() < deadline:
        ids = _lease(batch_size)
        if not ids:
            break
        for position, pk in enumerate(ids):
            if time.monotonic() >= deadline:
                OutboundDelivery.objects.filter(pk__in=ids[position:], status="pending").update(
                    next_attempt_at=timezone.now()
                )
                return done
            attempt(pk)
            done += 1
    return done


def has_due() -> bool:
    return OutboundDelivery.objects.filter(
        status=OutboundDelivery.Status.PENDING, next_attempt_at__lte=timezone.now()
    ).exists()
