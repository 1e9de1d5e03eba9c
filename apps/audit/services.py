"""Writes of the audit log: `record()` and the retention purge.

`record()` is called by the service that makes an audited write, inside that write's transaction,
so the row commits or rolls back with the change. Who acted is not passed down through every
service: the entry point names it once for the request (`acting()`): the API for its token, Django
admin for the staff user, the console for its agent. Without one the actor is `system` (operator
commands, beat jobs).

Rows name fields as the API does: a column that stores a secret encrypted (`api_key_encrypted`) is
recorded under the API's field (`api_key`). Secrets never reach a row: a field named in `secrets`,
or whose name says it holds one, is stored as "[hidden]" on both sides of the change; a secret that
is set on neither side (never given) is no change.
"""

from __future__ import annotations

import contextvars
import re
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any

from django.db import transaction
from django.utils import timezone

from .models import AuditEntry

HIDDEN = "[hidden]"
CHANGED = "[changed]"  # a text recorded as changed without its words (an assistant's prompt)
RETENTION = timedelta(days=365)
PURGE_BATCH = 5000
_SECRET_NAME = re.compile(
    r"(secret|password|api_key|apikey|token_hash|secret_hash|credential|private_key|(^|_)token$|(^|_)sid$)", re.I
)


@dataclass(frozen=True)
class Actor:
    type: str
    id: str = ""
    name: str = ""


SYSTEM = Actor(AuditEntry.ActorType.SYSTEM, "", "system")
_actor: contextvars.ContextVar[Actor | None] = contextvars.ContextVar("audit_actor", default=None)


def token_actor(token) -> Actor:
    """An API token acts under its own name."""
    return Actor(AuditEntry.ActorType.TOKEN, str(token.pk), token.name or token.prefix)


def staff_actor(user) -> Actor:
    return Actor(AuditEntry.ActorType.STAFF, str(user.pk), user.get_username())


def agent_actor(agent) -> Actor:
    return Actor(AuditEntry.ActorType.AGENT, str(agent.pk), getattr(agent, "name", "") or str(agent.pk))


def set_actor(actor: Actor | None) -> contextvars.Token:
    """Name the actor of the current request; reset with `reset_actor(token)` when it ends."""
    return _actor.set(actor)


def reset_actor(token: contextvars.Token) -> None:
    _actor.reset(token)


@contextmanager
def acting(actor: Actor) -> Iterator[Actor]:
    token = _actor.set(actor)
    try:
        yield actor
    finally:
        _actor.reset(token)


def current_actor() -> Actor:
    return _actor.get() or SYSTEM


def is_secret(field: str) -> bool:
    return bool(_SECRET_NAME.search(field))


def _plain(value: Any) -> Any:
    """A JSON-storable copy of a field value."""
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)


def diff(
    before: Mapping[str, Any], after: Mapping[str, Any], *, secrets: Iterable[str] = (), texts: Iterable[str] = ()
) -> dict:
    """{field: {from, to}} of the fields whose value differs between `before` and `after` (a field
    missing on one side is None there). Secret fields show "[hidden]" on both sides, `texts` fields
    "[changed]"."""
    secret, text = set(secrets), set(texts)
    out = {}
    for field in sorted(set(before) | set(after)):
        old, new = _plain(before.get(field)), _plain(after.get(field))
        if old == new:
            continue
        if field in secret or is_secret(field):
            if _unset(old) and _unset(new):
                continue
            old, new = HIDDEN, HIDDEN
        elif field in text:
            old, new = CHANGED, CHANGED
        out[field] = {"from": old, "to": new}
    return out


def _unset(value: Any) -> bool:
    return value is None or value == ""


def _hide(changes: Mapping[str, Any], secrets: set[str], texts: set[str]) -> dict:
    hidden = {}
    for field, change in changes.items():
        if field in texts:
            hidden[field] = {"from": CHANGED, "to": CHANGED}
            continue
        if field in secrets or is_secret(field):
            if _unset(change.get("from")) and _unset(change.get("to")):
                continue
            hidden[field] = {"from": HIDDEN, "to": HIDDEN}
        else:
            hidden[field] = {"from": _plain(change.get("from")), "to": _plain(change.get("to"))}
    return hidden


def record(
    *,
    widget,
    action: str,
    target_type: str,
    target_id: Any = "",
    changes: Mapping[str, Mapping[str, Any]] | None = None,
    secrets: Iterable[str] = (),
    texts: Iterable[str] = (),
    actor: Actor | None = None,
) -> AuditEntry:
    """Write one audit row for `widget`. Call it inside the audited write's transaction, after the
    write. `changes` is {field: {"from": old, "to": new}} (see `diff`); `actor` defaults to the
    request's (`acting`), else `system`."""
    actor = actor or current_actor()
    return AuditEntry.objects.create(
        widget_id=getattr(widget, "pk", widget),
        actor_type=actor.type,
        actor_id=actor.id,
        actor_name=actor.name[:200],
        action=action,
        target_type=target_type,
        target_id=str(target_id),
        changes=_hide(changes or {}, set(secrets), set(texts)),
    )


# Bookkeeping columns that say nothing about what changed.
_NOT_CHANGES = frozenset({"id", "widget", "created_at", "updated_at"})


# A column holding a secret encrypted; the API's field is the name without it.
_ENCRYPTED = "_encrypted"


def field_name(attname: str) -> str:
    """The API's name of a stored column: `api_key_encrypted` is `api_key`; any other column is
    named by its attribute (`backup_credential_id`)."""
    return attname.removesuffix(_ENCRYPTED) if attname.endswith(_ENCRYPTED) else attname


def values(obj) -> dict[str, Any]:
    """The concrete field values of a model instance by the API's field names (`field_name`),
    bookkeeping columns left out: the `before`/`after` of `record_change`."""
    return {
        field_name(field.attname): getattr(obj, field.attname)
        for field in obj._meta.concrete_fields
        if field.name not in _NOT_CHANGES and field.attname not in _NOT_CHANGES
    }


def record_change(
    *,
    widget,
    action: str,
    target_type: str,
    target_id: Any = "",
    before: Mapping[str, Any],
    after: Mapping[str, Any],
    secrets: Iterable[str] = (),
    texts: Iterable[str] = (),
    always: bool = False,
) -> AuditEntry | None:
    """`record` with the changes between `before` and `after` (see `diff`). A write that changed
    nothing writes no row unless `always` (a creation or deletion is recorded as such)."""
    changes = diff(before, after, secrets=secrets, texts=texts)
    if not changes and not always:
        return None
    return record(
        widget=widget,
        action=action,
        target_type=target_type,
        target_id=target_id,
        changes=changes,
        secrets=secrets,
        texts=texts,
    )


def record_row(
    *,
    widget,
    target_type: str,
    target_id: Any,
    before: Mapping[str, Any] | None,
    after: Mapping[str, Any] | None,
    texts: Iterable[str] = (),
) -> AuditEntry | None:
    """`record_change` of one row's life: `target_type.created` without `before`, `.deleted`
    without `after` (both always recorded), else `.changed` when a field changed."""
    action = "created" if before is None else "deleted" if after is None else "changed"
    return record_change(
        widget=widget,
        action=f"{target_type}.{action}",
        target_type=target_type,
        target_id=target_id,
        before=before or {},
        after=after or {},
        texts=texts,
        always=action != "changed",
    )


def purge_old_entries(*, now: datetime | None = None, batch_size: int = PURGE_BATCH) -> int:
    """Delete rows older than RETENTION, a batch per transaction. Returns how many went."""
    cutoff = (now or timezone.now()) - RETENTION
    total = 0
    while True:
        with transaction.atomic():
            ids = list(
                AuditEntry.objects.filter(at__lt=cutoff).order_by("at").values_list("pk", flat=True)[:batch_size]
            )
            if not ids:
                return total
            total += AuditEntry.objects.filter(pk__in=ids).delete()[0]
