"""The two signature schemes sent on every delivery, with the same secret.

1. `X-Service-Signature: sha256=v1:<hex>`: HMAC-SHA256 over the raw body bytes, keyed with the
   secret string's UTF-8 bytes (the spec's scheme).
2. Standard Webhooks: `webhook-signature: v1,<base64>` of HMAC-SHA256 over `{id}.{timestamp}.{body}`,
   keyed with the base64-decoded part of a `whsec_` secret (the raw UTF-8 bytes of any other
   secret), so receivers can verify with off-the-shelf libraries and reject replays by timestamp.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac

from apps.core.crypto import SECRET_PREFIX


def service_signature(secret: str, body: bytes) -> str:
    return "sha256=v1:" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def verify_service_signature(secret: str, body: bytes, header: str) -> bool:
    return hmac.compare_digest(service_signature(secret, body), header or "")


def standard_key(secret: str) -> bytes:
    if secret.startswith(SECRET_PREFIX):
        try:
            return base64.b64decode(secret[len(SECRET_PREFIX) :], validate=True)
        except (binascii.Error, ValueError):
            pass
    return secret.encode()


def standard_signature(secret: str, msg_id: str, timestamp: int, body: bytes) -> str:
    signed = f"{msg_id}.{timestamp}.".encode() + body
    digest = hmac.new(standard_key(secret), signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode()


def verify_standard_signature(secret: str, msg_id: str, timestamp: int, body: bytes, header: str) -> bool:
    expected = standard_signature(secret, msg_id, timestamp, body)
    return any(hmac.compare_digest(expected, candidate) for candidate in (header or "").split())
