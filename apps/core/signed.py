"""The signed envelope of the application-assistant endpoints (product-decisions.md "Signed
application-assistant calls"): the one verifier every signed route calls.

A request carries the bound token (`Authorization: Bearer`) and
- `X-Service-Timestamp`: Unix seconds, within 300 s of ours (else 401 `stale_timestamp`);
- `X-Service-Nonce`: 16 to 64 characters of `[A-Za-z0-9_-]`, never seen before within 600 s
  (else 409 `nonce_reused`);
- `X-Service-Signature`: `sha256=v2:` + lowercase hex HMAC-SHA256 over
  `"{timestamp}.{nonce}.{METHOD} {path}.".encode() + raw body` (METHOD upper case, path the
  request's path without the query string, such as `POST /api/v1/ai/assistant/tickets/status`),
  keyed with the binding's 48-character signing secret (else 401 `invalid_signature`). Covering
  method and path means a captured request cannot be replayed against another signed route.

Deprecated: `sha256=v1:` over `"{timestamp}.{nonce}.".encode() + raw body` (no method or path) is
still accepted until the date in the setting `SIGNED_V1_ACCEPTED_UNTIL` (ISO date, exclusive;
empty refuses it at once); from that date a v1 signature is 401 `invalid_signature`.

SECURITY: the order is binding and token (403 `token_not_bound`) -> header shapes and signature
(401) -> timestamp window (401) -> nonce (409). The nonce is stored only after the signature and
the timestamp passed, so a request refused for either does not use it up; it is stored by a unique
insert (atomic across processes on every database). Signatures are compared in constant time.

The integration binding (bound token and signing secret) belongs to the AI app, which core may not
import: it provides the `signing_binding` port (apps.core.ports), `fn(widget) -> SigningBinding | None`.
With no binding (or no provider) every signed call is 403 `token_not_bound`.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import time
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from apps.core import ports
from apps.core.errors import AppError
from apps.core.models import ApiToken, SignedNonce, Widget

TIMESTAMP_HEADER = "X-Service-Timestamp"
NONCE_HEADER = "X-Service-Nonce"
SIGNATURE_HEADER = "X-Service-Signature"
WINDOW_SECONDS = 300
NONCE_TTL = timedelta(seconds=600)
SIGNATURE_PREFIX = "sha256=v2:"
LEGACY_SIGNATURE_PREFIX = "sha256=v1:"
_NONCE_RE = re.compile(r"[A-Za-z0-9_-]{16,64}")
_TIMESTAMP_RE = re.compile(r"[0-9]{1,12}")
_SIGNATURE_RE = re.compile(r"sha256=v[12]:[0-9a-f]{64}")

# What every signed route's OpenAPI description appends.
OPENAPI_ENVELOPE = (
    " Signed: the integration's bound token (`Authorization: Bearer`) and `X-Service-Timestamp` (Unix "
    "seconds, within 300 s), `X-Service-Nonce` (16 to 64 of `[A-Za-z0-9_-]`, once within 600 s) and "
    '`X-Service-Signature` = `sha256=v2:` + hex HMAC-SHA256 of `"{timestamp}.{nonce}.{METHOD} {path}." + '
    "raw body` (for example `POST /api/v1/ai/assistant/turn`, the path without the query string) keyed with "
    "the binding's signing secret: 401 `invalid_signature` / `stale_timestamp`, 403 `token_not_bound`, "
    "409 `nonce_reused` (a refused signature or timestamp does not use the nonce up). Deprecated: "
    '`sha256=v1:` over `"{timestamp}.{nonce}." + raw body` (no method or path) is accepted until the '
    "date of the deployment setting `SIGNED_V1_ACCEPTED_UNTIL` (default 2027-06-01), then refused."
)


@dataclass(frozen=True)
class SigningBinding:
    token_id: int
    secret: str


class InvalidSignature(AppError):
    """The signed call's signature is missing or wrong, or its timestamp or nonce header is malformed."""

    status, code, title = 401, "invalid_signature", "Invalid signature"
    headers = {"WWW-Authenticate": 'Bearer realm="api", error="invalid_signature"'}


class StaleTimestamp(AppError):
    """`X-Service-Timestamp` is more than 300 s away from the server's clock."""

    status, code, title = 401, "stale_timestamp", "Stale timestamp"
    headers = {"WWW-Authenticate": 'Bearer realm="api", error="stale_timestamp"'}


class NonceReused(AppError):
    """This `X-Service-Nonce` was used within 600 s; sign the request again with a new nonce."""

    status, code, title = 409, "nonce_reused", "Nonce already used"


class TokenNotBound(AppError):
    """Signed calls take only the token bound to the widget's integration (and need a binding)."""

    status, code, title = 403, "token_not_bound", "Token not bound"


def binding_for(widget: Widget) -> SigningBinding | None:
    return ports.lookup(ports.SIGNING_BINDING)(widget)


def sign(*, secret: str, timestamp: str, nonce: str, method: str, path: str, body: bytes) -> str:
    """The `X-Service-Signature` value of a request (also what clients and tests compute)."""
    signed_part = f"{timestamp}.{nonce}.{method.upper()} {path}.".encode() + body
    return SIGNATURE_PREFIX + hmac.new(secret.encode(), signed_part, hashlib.sha256).hexdigest()


def sign_legacy(*, secret: str, timestamp: str, nonce: str, body: bytes) -> str:
    """The deprecated v1 signature (no method or path), accepted until `SIGNED_V1_ACCEPTED_UNTIL`."""
    digest = hmac.new(secret.encode(), f"{timestamp}.{nonce}.".encode() + body, hashlib.sha256).hexdigest()
    return LEGACY_SIGNATURE_PREFIX + digest


def legacy_accepted(now: float) -> bool:
    """Whether a v1 signature is still accepted at `now` (before `SIGNED_V1_ACCEPTED_UNTIL`, UTC)."""
    until = getattr(settings, "SIGNED_V1_ACCEPTED_UNTIL", "")
    if not until:
        return False
    return datetime.fromtimestamp(now, UTC).date() < date.fromisoformat(until)


def verify(
    *, widget: Widget, token: ApiToken, meta: dict, method: str, path: str, body: bytes, now: float | None = None
) -> str:
    """Check a signed call (see the module docstring); returns the nonce, now used up."""
    binding = binding_for(widget)
    if binding is None or not hmac.compare_digest(str(binding.token_id), str(token.pk)):
        raise TokenNotBound("Signed calls take only the token bound to this widget's integration.")
    timestamp = meta.get("HTTP_X_SERVICE_TIMESTAMP") or ""
    nonce = meta.get("HTTP_X_SERVICE_NONCE") or ""
    signature = meta.get("HTTP_X_SERVICE_SIGNATURE") or ""
    if not _TIMESTAMP_RE.fullmatch(timestamp) or not _NONCE_RE.fullmatch(nonce):
        raise InvalidSignature(
            f"Send {TIMESTAMP_HEADER} (Unix seconds) and {NONCE_HEADER} (16 to 64 of [A-Za-z0-9_-])."
        )
    now = time.time() if now is None else now
    if signature.startswith(LEGACY_SIGNATURE_PREFIX) and legacy_accepted(now):
        expected = sign_legacy(secret=binding.secret, timestamp=timestamp, nonce=nonce, body=body)
    else:
        expected = sign(secret=binding.secret, timestamp=timestamp, nonce=nonce, method=method, path=path, body=body)
    if not _SIGNATURE_RE.fullmatch(signature) or not hmac.compare_digest(expected, signature):
        raise InvalidSignature(
            "The signature does not match the request: sign "
            '`"{timestamp}.{nonce}.{METHOD} {path}." + body` and send it as `sha256=v2:<hex>`.'
        )
    if abs(now - int(timestamp)) > WINDOW_SECONDS:
        raise StaleTimestamp(f"{TIMESTAMP_HEADER} must be within {WINDOW_SECONDS} s of the server's clock.")
    _use_nonce(widget, nonce)
    return nonce


def _use_nonce(widget: Widget, nonce: str) -> None:
    for _ in range(2):
        try:
            with transaction.atomic():
                SignedNonce.objects.create(widget=widget, nonce=nonce)
                return
        except IntegrityError:
            stale = timezone.now() - NONCE_TTL
            if SignedNonce.objects.filter(widget=widget, nonce=nonce, created_at__lte=stale).delete()[0]:
                continue  # seen more than 600 s ago: free again
            raise NonceReused("This nonce was already used; sign the request again with a new nonce.") from None
    raise NonceReused("This nonce is in use.")


def purge_nonces() -> int:
    deleted, _ = SignedNonce.objects.filter(created_at__lte=timezone.now() - NONCE_TTL).delete()
    return deleted
