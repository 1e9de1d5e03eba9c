"""One push to one device: RFC 8291 encryption (aes128gcm, pywebpush's WebPusher.encode), an RFC
8292 VAPID signature (py_vapid), RFC 8030 headers, sent through the guarded outbound client
(apps.platform.outbound: the endpoint's address checked and pinned, a whole-call deadline), never
through pywebpush's own HTTP call.

404 and 410 from the push service mean the browser dropped the subscription: the row goes. Any
other failure is logged and dropped: a notification is worth something only now, and the
console's own alerts and lists still tell the operator.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from urllib.parse import urlsplit

from django.conf import settings
from py_vapid import Vapid
from pywebpush import WebPusher

from apps.platform import outbound

from . import services
from .models import PushSubscription

logger = logging.getLogger(__name__)

# A push service answers in well under a second; one that does not is not waited for long (only
# this task waits: every device has its own).
TIMEOUT = (3.05, 5)
DEADLINE = 8.0
RESPONSE_CAP = 16 * 1024
# How long the push service keeps a notification for a device that is offline: news older than
# this is stale (the console's list says the rest).
TTL_SECONDS = 3600
JWT_LIFETIME = 12 * 3600
GONE = (404, 410)

_sender: outbound.GuardedSession | None = None
_sender_lock = threading.Lock()


def _session() -> outbound.GuardedSession:
    """One guarded session per process; its raw sends run on the outbound thread (thread-safe)."""
    global _sender
    if _sender is None:
        with _sender_lock:
            if _sender is None:
                _sender = outbound.get_session()
    return _sender


def vapid_headers(endpoint: str) -> dict[str, str]:
    """`Authorization: vapid t=<JWT>, k=<public key>` for the push service's origin."""
    parts = urlsplit(endpoint)
    claims = {
        "aud": f"{parts.scheme}://{parts.netloc}",
        "exp": int(time.time()) + JWT_LIFETIME,
        "sub": settings.VAPID_SUBJECT,
    }
    return Vapid.from_string(settings.VAPID_PRIVATE_KEY).sign(claims)


def encrypt(subscription: PushSubscription, data: dict) -> bytes:
    info = {"endpoint": subscription.endpoint, "keys": {"p256dh": subscription.p256dh, "auth": subscription.auth}}
    body = json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode()
    return WebPusher(info).encode(body, content_encoding="aes128gcm")["body"]


def send(subscription: PushSubscription, data: dict, *, urgency: str = "high") -> str:
    """Send one notification; returns `sent`, `gone` (the row deleted) or `failed`."""
    headers = {
        "Content-Type": "application/octet-stream",
        "Content-Encoding": "aes128gcm",
        "TTL": str(TTL_SECONDS),
        "Urgency": urgency,
        **vapid_headers(subscription.endpoint),
    }
    try:
        response = _session().send_bytes(
            "POST",
            subscription.endpoint,
            body=encrypt(subscription, data),
            headers=headers,
            timeout=TIMEOUT,
            max_bytes=RESPONSE_CAP,
            deadline=DEADLINE,
        )
    except (outbound.OutboundBlocked, outbound.OutboundError) as exc:
        logger.warning("push to subscription %s failed: %s", subscription.pk, getattr(exc, "reason", exc))
        return "failed"
    if response.status_code in GONE:
        services.forget_endpoint(subscription_id=subscription.pk)
        return "gone"
    if 200 <= response.status_code < 300:
        services.record_success(subscription_id=subscription.pk)
        return "sent"
    logger.warning("push to subscription %s answered %s", subscription.pk, response.status_code)
    return "failed"


def close_session() -> None:
    """Close the pooled connections (tests, shutdown); the next push opens new ones."""
    global _sender
    with _sender_lock:
        if _sender is not None:
            _sender.close()
            _sender = None
