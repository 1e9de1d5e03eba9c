"""One attempt: its request built and signed, handed to the guarded client's outbound thread
(`_start`), and its answer read into an `Outcome` (`_conclude`). No database work."""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass
from datetime import datetime

from django.utils import timezone

from apps.core import outbound

from .. import payloads, signing
from ..models import Delivery
from .kinds import kind_of
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


def response_excerpt(content: bytes) -> str:
    """The first RESPONSE_EXCERPT_BYTES of an answer as the log keeps them: decoded (bad bytes
    replaced), NULs replaced (PostgreSQL text refuses them), personal data masked like the payload."""
    text = content[:RESPONSE_EXCERPT_BYTES].decode("utf-8", errors="replace").replace("\x00", "\ufffd")
    return payloads.mask_text(text)


@dataclass(eq=False)  # each attempt is its own key in the run's `running`
class _Started:
    """An attempt in flight: its request was handed to the outbound thread (`call`), or it ended
    before anything was sent (`call` None, `error` set)."""

    delivery: Delivery
    started: datetime
    clock: float
    call: Future | None = None
    error: str = ""


def _start(delivery: Delivery) -> _Started:
    """Sign one attempt and hand its request to the guarded client's loop; no database work and no
    waiting. The secret is read now, so a rotation reaches retries. The endpoint's kind adds its
    headers and sets the attempt's limits."""
    sub = delivery.target
    started = _Started(delivery, timezone.now(), time.monotonic())
    secret = _secret(sub.secret_encrypted)
    if secret is None:
        started.error = "missing_secret"
        return started
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
    kind = kind_of(delivery)
    if kind.headers:
        headers.update(kind.headers)
    previous = _previous_secret(sub, started.started)
    if previous is not None:
        headers["X-Service-Signature-Previous"] = signing.service_signature(previous, body)
        headers["webhook-signature"] += " " + signing.standard_signature(previous, event_id, ts, body)
    started.call = _session().submit_bytes(
        "POST",
        sub.url,
        body=body,
        headers=headers,
        timeout=kind.timeout or TIMEOUT,
        max_bytes=RESPONSE_CAP,
        deadline=kind.deadline or ATTEMPT_DEADLINE,
    )
    return started


def _conclude(attempt: _Started, ended: float | None = None) -> Outcome:
    """The outcome of a started attempt (waits for its answer if it has none yet); `ended` is when
    it finished (monotonic), now when not given."""
    status_code, error, permanent, excerpt = None, attempt.error, False, ""
    if error == "missing_secret":
        permanent = True
    elif attempt.call is not None:
        try:
            response = attempt.call.result()
            status_code = response.status_code
            excerpt = response_excerpt(response.content)
            if not 200 <= status_code < 300:
                error = f"http_{status_code}"  # redirects included: never followed
        except outbound.OutboundBlocked as exc:
            error, permanent = f"blocked:{exc.reason}", True
        except outbound.OutboundError as exc:
            error = exc.reason
    duration = int(((ended if ended is not None else time.monotonic()) - attempt.clock) * 1000)
    return Outcome(attempt.delivery, attempt.started, duration, status_code, error[:200], permanent, excerpt)


def _send(delivery: Delivery) -> Outcome:
    """One attempt, waited for (the inline runs)."""
    return _conclude(_start(delivery))
