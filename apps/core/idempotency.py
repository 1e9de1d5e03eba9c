"""`X-Service-Idempotency-Key` on operations marked `x-idempotency: required`.

The key is claimed by inserting a row unique per (widget, key) inside the operation's own
transaction, before any work: of two concurrent requests with one key exactly one insert wins (the
other waits on the unique index and then fails), so there is exactly one side effect. When the
operation fails (validation, domain error, a provider 502), the transaction rolls back and the
claim with it, so the key is not burnt and the client may retry with it. A reused key answers 409
`idempotency_key_reused` with `previous` (the original status, resource id or location, and when),
never a replayed success. Rows older than 24 h are purged by a beat job and ignored until then.

A replaying operation (a signed call's `request_id`, apps.support) claims its key the same way with
`claim_or_answer` and records its answer with the claim: a repeat within 24 h gets that answer and
changes nothing. Its key is `derived_key(...)`, which starts with DERIVED_PREFIX: that holds an ASCII
space, which `validate_key` refuses in a header key, so the two kinds share the table (one unique
index per widget) without a client's header key ever taking a derived key or answering for one.
"""

from __future__ import annotations

import base64
import hashlib
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from apps.core.errors import IdempotencyKeyMissing, IdempotencyKeyReused, InvalidIdempotencyKey
from apps.core.models import IdempotencyKey, Widget

HEADER = "X-Service-Idempotency-Key"
META_KEY = "HTTP_X_SERVICE_IDEMPOTENCY_KEY"


# The start of every derived key: the space keeps it out of any header key's reach (validate_key).
DERIVED_PREFIX = "derived "


def derived_key(*parts: str) -> str:
    """The key a replaying operation claims for `parts` (a signed call's endpoint and `request_id`):
    DERIVED_PREFIX and the unpadded base64url SHA-256 of the parts joined by newlines, 51 characters
    whatever the parts' length."""
    digest = hashlib.sha256("\n".join(parts).encode()).digest()
    return DERIVED_PREFIX + base64.urlsafe_b64encode(digest).decode("ascii").rstrip("=")


def validate_key(raw: str | None) -> str:
    if raw is None:
        raise IdempotencyKeyMissing(f"This operation requires the {HEADER} header.")
    # WSGI/ASGI decode header bytes as latin-1; encoding back gives the bytes that were sent.
    try:
        size = len(raw.encode("latin-1"))
    except UnicodeEncodeError:
        size = len(raw.encode("utf-8"))
    if not 1 <= size <= 64 or any(ord(ch) <= 0x20 or ord(ch) == 0x7F for ch in raw):
        raise InvalidIdempotencyKey(f"{HEADER} must be 1 to 64 bytes without ASCII whitespace or control characters.")
    return raw


def _ttl() -> timedelta:
    return timedelta(seconds=settings.IDEMPOTENCY_KEY_TTL_SECONDS)


def previous_of(row: IdempotencyKey) -> dict:
    return {
        "status": row.response_status,
        "resource_id": row.resource_id or None,
        "location": row.location or None,
        "method": row.method,
        "path": row.path,
        "at": row.created_at.isoformat(),
    }


def claim(*, widget: Widget, key: str, method: str, path: str) -> IdempotencyKey:
    """Insert the claim row. Must run inside the operation's transaction."""
    assert transaction.get_connection().in_atomic_block, "claim() must run inside the operation's transaction"
    for _ in range(2):
        row = IdempotencyKey(widget=widget, key=key, method=method, path=path[:500])
        if _insert(row):
            return row
        existing = IdempotencyKey.objects.filter(widget=widget, key=key).first()
        if existing is None:
            continue  # the holder rolled back between our insert and our read: try again
        if existing.created_at <= timezone.now() - _ttl():
            existing.delete()
            continue
        raise IdempotencyKeyReused(
            "This idempotency key was already used within 24 hours; see `previous` for its result.",
            previous=previous_of(existing),
        )
    raise IdempotencyKeyReused("This idempotency key is in use.", previous=None)


def _insert(row: IdempotencyKey) -> bool:
    """Insert the claim; False when the widget holds the key already (after the holder's transaction
    ends, as the unique index makes a concurrent insert wait). One statement, `INSERT ... ON
    CONFLICT DO NOTHING RETURNING id`, the same on both databases: the ORM's spelling of "insert
    unless the key is held" is a savepoint around `save()` that catches the unique violation, three
    round trips on every idempotent write; `bulk_create(ignore_conflicts=True)` does not say whether
    it inserted."""
    connection = transaction.get_connection()
    fields = [field for field in IdempotencyKey._meta.concrete_fields if not field.primary_key]
    quote = connection.ops.quote_name
    held = ", ".join(quote(IdempotencyKey._meta.get_field(name).column) for name in ("widget", "key"))
    sql = (
        f"INSERT INTO {quote(IdempotencyKey._meta.db_table)} ({', '.join(quote(f.column) for f in fields)}) "  # noqa: S608
        f"VALUES ({', '.join(['%s'] * len(fields))}) "
        f"ON CONFLICT ({held}) DO NOTHING RETURNING {quote(IdempotencyKey._meta.pk.column)}"
    )
    values = [field.get_db_prep_save(field.pre_save(row, add=True), connection) for field in fields]
    with connection.cursor() as cursor:
        cursor.execute(sql, values)
        inserted = cursor.fetchone()
    if inserted is None:
        return False
    row.pk = inserted[0]  # `record` saves its answer by this key (an UPDATE of update_fields)
    return True


def record(
    row: IdempotencyKey, *, status: int, resource_id: object = None, location: str = "", answer: dict | None = None
) -> None:
    row.response_status = status
    row.resource_id = "" if resource_id is None else str(resource_id)[:64]
    row.location = (location or "")[:500]
    row.answer = answer
    row.save(update_fields=["response_status", "resource_id", "location", "answer"])


def answer_of(*, widget: Widget, key: str) -> dict | None:
    """The answer recorded under `key` within 24 h: a replaying operation's repeat, read before its
    transaction (and its rate limits). None when there is none; `claim_or_answer` decides then."""
    row = IdempotencyKey.objects.filter(widget=widget, key=key, created_at__gt=timezone.now() - _ttl()).first()
    return None if row is None else row.answer


def claim_or_answer(*, widget: Widget, key: str, method: str, path: str) -> IdempotencyKey | dict:
    """For a replaying operation: claim `key` (the claim row, to `record` with `answer=`), or return
    the answer recorded under it within 24 h. Must run inside the operation's transaction; a
    concurrent first call with the key is waited for. A claimed key that holds no answer is 409
    `idempotency_key_reused` (none is committed without one: the answer is recorded in the claim's
    transaction)."""
    try:
        return claim(widget=widget, key=key, method=method, path=path)
    except IdempotencyKeyReused as reused:
        existing = IdempotencyKey.objects.filter(widget=widget, key=key).first()
        if existing is None or existing.answer is None:
            raise reused from None
        return existing.answer


def purge_expired() -> int:
    deleted, _ = IdempotencyKey.objects.filter(created_at__lte=timezone.now() - _ttl()).delete()
    return deleted
