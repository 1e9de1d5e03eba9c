"""One attempt: its request built (by the endpoint's kind, or signed here), handed to the guarded
client's outbound thread (`_start`), and its answer read into an `Outcome` (`_conclude`). No database
work."""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass
from datetime import datetime

from django.utils import timezone

from apps.platform import outbound

from .. import payloads, signing
from ..models import Delivery
from .kinds import EndpointKind, Request, Undeliverable, kind_of
from .secret_cache import _previous_secret, _secret

TIMEOUT = (3.05, 10)
ATTEMPT_DEADLINE = 15.0  # seconds for a whole attempt, however slowly the endpoint answers
RESPONSE_CAP = 64 * 1024
RESPONSE_EXCERPT_BYTES = 256  # of the receiver's answer, kept (masked) on the attempt row


_sender: outbound.GuardedSession | None = None
_sender_lock = threading.Lock()


def _session() -> outbound.GuardedSession:
    """The engine's guarded session, one per process: its requests run on the outbound thread, where
    its pooled HTTPS connections live (a forked child opens its own)."""
    global _sender
    if _sender is None:
        with _sender_lock:
            if _sender is None:
                _sender = outbound.get_session()
    return _sender


def close_session() -> None:
    """Close the engine's pooled connections (tests, shutdown); the next attempt opens new ones."""
    global _sender
    with _sender_lock:
        sender, _sender = _sender, None
    if sender is not None:
        sender.close()


@dataclass
class Outcome:
    delivery: Delivery
    started: datetime
    duration_ms: int
    status_code: int | None
    error: str
    permanent: bool
    excerpt: str = ""
    retry_after: float | None = None  # seconds the receiver asked for, as its kind read them


def response_excerpt(content: bytes) -> str:
    """The first RESPONSE_EXCERPT_BYTES of an answer as the log keeps them: decoded (bad bytes
    replaced), NULs replaced (PostgreSQL text refuses them), personal data masked like the payload."""
    text = content[:RESPONSE_EXCERPT_BYTES].decode("utf-8", errors="replace").replace("\x00", "\ufffd")
    return payloads.mask_text(text)


@dataclass(eq=False)  # each attempt is its own key in the run's `running`
class _Started:
    """An attempt in flight: its request was handed to the outbound thread (`call`), or it ended
    before anything was sent (`call` None, `error` set, `permanent` when no retry can help)."""

    delivery: Delivery
    started: datetime
    clock: float
    call: Future | None = None
    error: str = ""
    permanent: bool = False


def signed_request(delivery: Delivery, *, url: str, secret: str, previous: str | None = None) -> Request:
    """The engine's signed POST of the row's body to `url`: `X-Service-Signature` and the Standard
    Webhooks headers keyed by `secret` (and by `previous` beside it during a rotation's overlap)."""
    body = delivery.body.encode()
    ts = int(time.time())
    event_id = delivery.idempotency_key
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
    if previous is not None:
        headers["X-Service-Signature-Previous"] = signing.service_signature(previous, body)
        headers["webhook-signature"] += " " + signing.standard_signature(previous, event_id, ts, body)
    return Request(url=url, body=body, headers=headers)


def _request(delivery: Delivery, kind: EndpointKind, started: datetime) -> Request:
    """The attempt's request: the kind's own, else the signed POST to the row's endpoint with its
    secret read now (so a rotation reaches retries), with the kind's headers."""
    built = kind.request(delivery)
    if built is not None:
        return built
    target = delivery.target
    secret = _secret(target.secret_encrypted)
    if secret is None:
        raise Undeliverable("missing_secret")
    built = signed_request(delivery, url=target.url, secret=secret, previous=_previous_secret(target, started))
    if kind.headers:
        built.headers.update(kind.headers)
    return built


def _start(delivery: Delivery) -> _Started:
    """Build one attempt's request and hand it to the guarded client's loop; no database work and
    no waiting. The endpoint's kind builds the request or adds its headers, and sets the attempt's
    limits."""
    started = _Started(delivery, timezone.now(), time.monotonic())
    kind = kind_of(delivery)
    try:
        request = _request(delivery, kind, started.started)
    except Undeliverable as exc:
        started.error, started.permanent = exc.reason, True
        return started
    started.call = _session().submit_bytes(
        "POST",
        request.url,
        body=request.body,
        headers=request.headers,
        timeout=kind.timeout or TIMEOUT,
        max_bytes=RESPONSE_CAP,
        deadline=kind.deadline or ATTEMPT_DEADLINE,
    )
    return started


def _conclude(attempt: _Started, ended: float | None = None) -> Outcome:
    """The outcome of a started attempt (waits for its answer if it has none yet); `ended` is when
    it finished (monotonic), now when not given. The endpoint's kind reads the answer."""
    status_code, error, permanent, excerpt, retry_after = None, attempt.error, attempt.permanent, "", None
    if attempt.call is not None:
        try:
            response = attempt.call.result()
            status_code = response.status_code
            excerpt = response_excerpt(response.content)
            verdict = kind_of(attempt.delivery).verdict(status_code, response.content, response.headers)
            if verdict is not None:
                error, permanent, retry_after = verdict.error, verdict.permanent, verdict.retry_after
            elif not 200 <= status_code < 300:
                error = f"http_{status_code}"  # redirects included: never followed
        except outbound.OutboundBlocked as exc:
            error, permanent = f"blocked:{exc.reason}", True
        except outbound.OutboundError as exc:
            error = exc.reason
    duration = int(((ended if ended is not None else time.monotonic()) - attempt.clock) * 1000)
    return Outcome(
        attempt.delivery, attempt.started, duration, status_code, error[:200], permanent, excerpt, retry_after
    )


def _send(delivery: Delivery) -> Outcome:
    """One attempt, waited for (the inline runs)."""
    return _conclude(_start(delivery))
