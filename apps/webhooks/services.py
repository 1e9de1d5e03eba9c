"""Subscriptions and the delivery engine.

Fan-out (called by the outbox for every event) writes one Delivery row per matching endpoint in
the outbox transaction. The rows are the source of truth: `deliver_due` sends every row whose
`next_attempt_at` has passed, leasing it first (the lease moves `next_attempt_at` forward), so a
lost Celery message or a killed worker delays a delivery by at most the lease, never loses it;
the beat sweeper triggers `deliver_due` while due rows exist. Attempts run on a thread pool over
one pooled guarded session, so a slow endpoint holds one thread, not the batch.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import Counter
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import IntegrityError, transaction
from django.utils import timezone

from apps.core import outbound
from apps.core.errors import Conflict, ValidationFailed
from apps.core.models import OutboxEvent, Widget

from . import catalogue, payloads, signing
from .crypto import decrypt_secret, encrypt_secret, generate_secret
from .models import Attempt, Delivery, Subscription

logger = logging.getLogger(__name__)

MAX_ATTEMPTS = 4
TIMEOUT = (3.05, 10)
ATTEMPT_DEADLINE = 15.0  # seconds for a whole attempt, however slowly the endpoint answers
# A leased row is not re-driven before this: longer than a run's time budget (deliver_due's
# max_seconds, 50 s, during which a leased row is sent or goes back) plus one attempt's deadline.
LEASE = timedelta(seconds=ATTEMPT_DEADLINE * 6)
RESPONSE_CAP = 64 * 1024


def retry_wait(failed_attempt: int) -> int:
    """After failed attempt n (1, 2, 3): min(60, 2^n * 5) seconds: 10, 20, 40."""
    return min(60, 2**failed_attempt * 5)


class DuplicateSubscription(Conflict):
    """A subscription of this widget already targets that url."""

    code, title = "subscription_url_exists", "A subscription for this url already exists"


class NotRedeliverable(ValidationFailed):
    """This delivery cannot be redelivered to the subscription as it is now."""

    code, title = "not_redeliverable", "Delivery is not redeliverable"


# --- subscriptions -----------------------------------------------------------------------------------


def check_destination(url: str) -> None:
    """https only, no credentials, and every resolved address public (loopback only when
    OUTBOUND_ALLOW_LOOPBACK). Raises ValidationFailed at `url`."""
    try:
        parts = outbound.check_url(url)
        outbound.pin_address(parts.hostname, parts.port or 443)
    except outbound.OutboundBlocked as exc:
        raise ValidationFailed(errors={"url": [f"Refused destination ({exc.reason})."]}) from None
    except outbound.OutboundError:
        raise ValidationFailed(errors={"url": ["The host does not resolve."]}) from None


def validate_events(events: list[str], *, legacy: bool) -> list[str]:
    errors = []
    for name in events:
        if legacy:
            if name not in catalogue.LEGACY_NAMES:
                errors.append(f"{name!r} is not a legacy event name ({', '.join(catalogue.LEGACY_NAMES)}).")
        elif name in catalogue.REFUSED_NATIVE:
            errors.append(catalogue.REFUSED_NATIVE[name])
        elif name not in catalogue.NATIVE_NAMES:
            errors.append(f"{name!r} is not a native event name.")
    if errors:
        raise ValidationFailed(errors={"events": errors})
    return list(dict.fromkeys(events))


@transaction.atomic
def create_subscription(
    *, widget: Widget, url: str, events: list[str], secret: str | None = None, is_legacy_compat: bool = False
) -> tuple[Subscription, str]:
    """Returns the subscription and its secret (shown once)."""
    events = validate_events(events, legacy=is_legacy_compat)
    check_destination(url)
    secret = secret or generate_secret()
    try:
        with transaction.atomic():
            sub = Subscription.objects.create(
                widget=widget,
                url=url,
                events=events,
                secret_encrypted=encrypt_secret(secret),
                is_legacy_compat=is_legacy_compat,
            )
    except IntegrityError:
        raise DuplicateSubscription("This widget already has a subscription for that url.") from None
    return sub, secret


@transaction.atomic
def update_subscription(*, widget: Widget, subscription: Subscription, changes: dict) -> Subscription:
    sub = Subscription.objects.select_for_update().get(pk=subscription.pk, widget=widget)
    legacy = changes.get("is_legacy_compat", sub.is_legacy_compat)
    events = changes.get("events", sub.events)
    if "events" in changes or legacy != sub.is_legacy_compat:
        try:
            events = validate_events(events, legacy=legacy)
        except ValidationFailed as exc:
            if "events" not in changes:
                raise ValidationFailed(
                    errors={"is_legacy_compat": ["The subscribed events do not fit that vocabulary; send events too."]}
                ) from exc
            raise
    if "url" in changes and changes["url"] != sub.url:
        check_destination(changes["url"])
        if Subscription.objects.filter(widget=widget, url=changes["url"]).exclude(pk=sub.pk).exists():
            raise DuplicateSubscription("This widget already has a subscription for that url.")
        sub.url = changes["url"]
    sub.events, sub.is_legacy_compat = events, legacy
    if "is_active" in changes:
        sub.is_active = changes["is_active"]
    sub.updated_at = timezone.now()
    sub.save()
    return sub


@transaction.atomic
def rotate_secret(*, widget: Widget, subscription: Subscription, secret: str | None = None) -> str:
    """Immediate cutover: the old secret is overwritten; queued and backing-off deliveries read
    the new one when their attempt runs."""
    secret = secret or generate_secret()
    Subscription.objects.filter(pk=subscription.pk, widget=widget).update(
        secret_encrypted=encrypt_secret(secret), updated_at=timezone.now()
    )
    return secret


@transaction.atomic
def delete_subscription(*, widget: Widget, subscription: Subscription) -> None:
    Subscription.objects.filter(pk=subscription.pk, widget=widget).delete()


# --- fan-out -------------------------------------------------------------------------------------------


def _envelope_for(sub: Subscription, event_type: str) -> str | None:
    if sub.is_legacy_compat:
        legacy = catalogue.NATIVE_TO_LEGACY.get(event_type)
        return "legacy" if legacy and legacy in sub.events else None
    return "native" if event_type in sub.events else None


def fan_out_events(events: list[OutboxEvent]) -> int:
    """EVENT_HANDLERS entry: one delivery per event and matching active endpoint, written in one
    INSERT that skips the endpoints already holding the event's delivery (fan-out may run twice).
    Returns the number of deliveries due to be sent."""
    by_widget: dict[int, list[Subscription]] = {}
    for sub in Subscription.objects.filter(widget_id__in={event.widget_id for event in events}, is_active=True):
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
    # ignore_conflicts: the unique (subscription, event) row of an earlier run stays as it is.
    Delivery.objects.bulk_create(rows, ignore_conflicts=True, batch_size=500)
    if due:
        transaction.on_commit(_trigger)
    return due


def _trigger(countdown: float | None = None) -> None:
    from .tasks import deliver_due

    try:
        if countdown:
            deliver_due.apply_async(countdown=countdown)
        else:
            deliver_due.delay()
    except Exception:  # the sweeper re-drives due rows; a lost trigger only delays them
        logger.warning("webhook delivery trigger failed; the sweeper will pick the rows up")


# --- delivery ------------------------------------------------------------------------------------------------


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
        transaction.on_commit(_trigger)
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
    from django.db.models import Q

    return Delivery.objects.filter(widget_id=subscription.widget_id, subscription=subscription).filter(
        Q(envelope=Delivery.Envelope.NATIVE) | Q(envelope=Delivery.Envelope.LEGACY, status=Delivery.Status.FAILED)
    )


def _lease(batch_size: int) -> list[int]:
    return [pk for pk, _ in _lease_rows(batch_size)]


def _lease_rows(batch_size: int) -> list[tuple[int, int]]:
    """Up to `batch_size` due deliveries, leased (their next_attempt_at moved LEASE ahead, so no
    other engine takes them meanwhile): (delivery pk, subscription pk), oldest due first."""
    now = timezone.now()
    with transaction.atomic():
        rows = list(
            Delivery.objects.select_for_update(skip_locked=True)
            .filter(status=Delivery.Status.PENDING, next_attempt_at__lte=now)
            .order_by("next_attempt_at")
            .values_list("pk", "subscription_id")[:batch_size]
        )
        if rows:
            Delivery.objects.filter(pk__in=[pk for pk, _ in rows]).update(next_attempt_at=now + LEASE)
    return rows


_session_local = threading.local()


def _session() -> outbound.GuardedSession:
    session = getattr(_session_local, "session", None)
    if session is None:
        session = _session_local.session = outbound.get_session()
    return session


@dataclass
class Outcome:
    delivery: Delivery
    started: datetime
    duration_ms: int
    status_code: int | None
    error: str
    permanent: bool


def _load(ids: list[int]) -> list[Delivery]:
    """The leased rows with their endpoints as they are now, in one query. Rows of an endpoint
    deactivated meanwhile are dropped silently (deleted endpoints took their rows with them)."""
    rows = list(
        Delivery.objects.select_related("subscription")
        .defer("payload")  # the log's copy: not needed to send
        .filter(pk__in=ids, status=Delivery.Status.PENDING)
    )
    inactive = [row.pk for row in rows if not row.subscription.is_active]
    if inactive:
        Delivery.objects.filter(pk__in=inactive).delete()
    return [row for row in rows if row.subscription.is_active]


def _send(delivery: Delivery) -> Outcome:
    """The HTTP part of one attempt: no database work, so it runs on a pool thread."""
    sub = delivery.subscription
    started = timezone.now()
    clock = time.monotonic()
    secret = decrypt_secret(sub.secret_encrypted)  # read when the attempt runs: rotation reaches retries
    status_code, error, permanent = None, "", False
    if secret is None:
        error, permanent = "missing_secret", True
    else:
        body = delivery.body.encode()
        ts = int(time.time())
        event_id = str(delivery.event_id)
        headers = {
            "Content-Type": "application/json",
            "User-Agent": "ChatWidgetService-Webhooks/1",
            "X-Service-Event": delivery.event_type,
            "X-Service-Signature": signing.service_signature(secret, body),
            "X-Service-Idempotency-Key": event_id,
            "X-Service-Delivery": str(delivery.delivery_id),
            "X-Service-Timestamp": str(ts),
            "webhook-id": event_id,
            "webhook-timestamp": str(ts),
            "webhook-signature": signing.standard_signature(secret, event_id, ts, body),
        }
        try:
            response = _session().send_bytes(
                "POST",
                sub.url,
                body=body,
                headers=headers,
                timeout=TIMEOUT,
                max_bytes=RESPONSE_CAP,
                deadline=ATTEMPT_DEADLINE,
            )
            status_code = response.status_code
            if not 200 <= status_code < 300:
                error = f"http_{status_code}"  # redirects included: never followed
        except outbound.OutboundBlocked as exc:
            error, permanent = f"blocked:{exc.reason}", True
        except outbound.OutboundError as exc:
            error = exc.reason
    duration = int((time.monotonic() - clock) * 1000)
    return Outcome(delivery, started, duration, status_code, error[:200], permanent)


def _record(outcomes: list[Outcome]) -> list[str]:
    """Write a set of finished attempts in one transaction: Attempt rows and the deliveries'
    new state. Rows whose endpoint was deleted while the attempt ran are skipped.

    The deliveries are updated in groups of the same new state (one UPDATE for all the
    successes of a batch): a per-row CASE (bulk_update) cost more than the attempts themselves."""
    if not outcomes:
        return []
    now = timezone.now()
    statuses: list[str] = []
    waits: list[int] = []
    with transaction.atomic():
        alive = set(
            Delivery.objects.filter(
                pk__in=[o.delivery.pk for o in outcomes], status=Delivery.Status.PENDING
            ).values_list("pk", flat=True)
        )
        attempts = []
        groups: dict[tuple, list[int]] = {}
        for outcome in outcomes:
            delivery = outcome.delivery
            if delivery.pk not in alive:
                statuses.append("gone")
                continue
            number = delivery.attempts + 1
            if not outcome.error:
                status, next_at = Delivery.Status.DELIVERED, None
            elif outcome.permanent or number >= MAX_ATTEMPTS:
                status, next_at = Delivery.Status.FAILED, None
            else:
                status, next_at = Delivery.Status.PENDING, now + timedelta(seconds=retry_wait(number))
                waits.append(retry_wait(number))
            attempts.append(
                Attempt(
                    delivery_id=delivery.pk,
                    number=number,
                    started_at=outcome.started,
                    duration_ms=outcome.duration_ms,
                    status_code=outcome.status_code,
                    error=outcome.error,
                )
            )
            groups.setdefault((status, number, next_at, outcome.status_code, outcome.error), []).append(delivery.pk)
            statuses.append(status)
        Attempt.objects.bulk_create(attempts)
        for (status, number, next_at, status_code, error), pks in groups.items():
            Delivery.objects.filter(pk__in=pks).update(
                status=status,
                attempts=number,
                next_attempt_at=next_at,
                last_status_code=status_code,
                last_error=error,
                updated_at=now,
            )
    if waits:
        _trigger(countdown=min(waits))
    return statuses


def attempt_delivery(delivery_pk: int) -> str:
    """One attempt of one leased delivery, inline. Returns the resulting status (or "gone")."""
    rows = _load([delivery_pk])
    if not rows:
        return "gone"
    return _record([_send(rows[0])])[0]


def deliver_due(
    *, max_seconds: float = 50.0, concurrency: int = 16, batch_size: int = 64, per_endpoint: int | None = None
) -> int:
    """Send due deliveries until none are due or the time budget is spent. Keeps up to
    `concurrency` attempts in flight on the pool (HTTP only) and refills as they finish; the
    finished ones are recorded together, from this thread. `concurrency=1` runs inline (in the
    caller's thread and transaction: used by tests).

    One endpoint has at most `per_endpoint` attempts in flight (default three quarters of the
    pool), so an endpoint that answers slowly, however many deliveries it has, always leaves
    threads to the others; its rows wait in the leased queue while the others' are sent."""
    deadline = time.monotonic() + max_seconds
    done = 0
    if concurrency <= 1:
        while time.monotonic() < deadline:
            ids = _lease(batch_size)
            if not ids:
                break
            for pk in ids:
                attempt_delivery(pk)
                done += 1
        return done
    per_endpoint = per_endpoint or max(1, concurrency * 3 // 4)
    pool = _executor(concurrency)  # lives with the process: its threads keep their HTTPS sessions
    running: dict[Future, int] = {}  # attempt -> its endpoint
    in_flight: Counter[int] = Counter()
    queue: list[tuple[int, int]] = []  # leased, not yet sent: (delivery, endpoint)
    while True:
        # Past the time budget nothing more is leased or started: the running attempts finish and
        # the queue goes back (so no row waits in it longer than the budget: LEASE covers that).
        in_time = time.monotonic() < deadline
        free = concurrency - len(running)
        sendable = sum(1 for _, sub_id in queue if in_flight[sub_id] < per_endpoint)
        if in_time and free and sendable < free and len(queue) < batch_size * 4:
            leased = _lease_rows(batch_size)
            queue += leased
            sendable += sum(1 for _, sub_id in leased if in_flight[sub_id] < per_endpoint)
        # Refill (one query loads the group) whenever a thread is free and a leased row may go.
        if in_time and free and sendable:
            take, wait_list, counts = [], [], in_flight.copy()
            for pk, sub_id in queue:
                if len(take) < free and counts[sub_id] < per_endpoint:
                    take.append(pk)
                    counts[sub_id] += 1
                else:
                    wait_list.append((pk, sub_id))
            queue = wait_list
            for row in _load(take):  # loaded just before sending: the endpoint as it is now
                running[pool.submit(_send, row)] = row.subscription_id
                in_flight[row.subscription_id] += 1
        if not running:
            if queue and in_time:
                continue
            break
        finished, _ = wait(running, return_when=FIRST_COMPLETED)
        if len(finished) < len(running):  # gather what finishes in the next moment too: one record
            more, _ = wait(running.keys() - finished, timeout=0.02)
            finished |= more
        outcomes = []
        for future in finished:
            in_flight[running.pop(future)] -= 1
            exc = future.exception()
            if exc is not None:
                logger.error("webhook attempt crashed: %s", exc.__class__.__name__)
            else:
                outcomes.append(future.result())
        _record(outcomes)
        done += len(finished)
    _release([pk for pk, _ in queue])
    return done


_executors: dict[tuple[int, int], ThreadPoolExecutor] = {}
_executors_lock = threading.Lock()


def _executor(concurrency: int) -> ThreadPoolExecutor:
    """One pool per process (re-made after a fork): bounded threads that keep their pooled HTTPS
    session across runs. They do no database work (the caller loads and records)."""
    key = (os.getpid(), concurrency)
    with _executors_lock:
        pool = _executors.get(key)
        if pool is None:
            pool = _executors[key] = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="webhook")
        return pool


def shutdown_executors() -> None:
    """Close every pool thread's database connection, then stop the pools (tests, shutdown)."""
    with _executors_lock:
        pools = list(_executors.items())
        _executors.clear()
    for (_, size), pool in pools:
        barrier = threading.Barrier(size)

        def close_own_connection(barrier: threading.Barrier = barrier) -> None:
            from django.db import connections

            barrier.wait(timeout=30)  # one task per thread: each closes its own connection
            connections.close_all()

        for future in [pool.submit(close_own_connection) for _ in range(size)]:
            future.exception()
        pool.shutdown(wait=True)


def _release(ids: list[int]) -> None:
    """Leased rows we did not get to go back to the queue now."""
    if ids:
        Delivery.objects.filter(pk__in=ids, status=Delivery.Status.PENDING).update(next_attempt_at=timezone.now())


def has_due() -> bool:
    return Delivery.objects.filter(status=Delivery.Status.PENDING, next_attempt_at__lte=timezone.now()).exists()
