"""The lease: due rows taken by one engine (their `next_attempt_at` moved LEASE ahead, so no other
engine takes them meanwhile), and loaded with their targets.

A pool run leases and loads on PostgreSQL in one statement (`_lease_and_load_sql`): an UPDATE that
returns the rows it leased joined to their targets, which the ORM has no spelling for (`update()`
returns a count). On the run's thread, the ORM's four round trips (BEGIN, the locking SELECT, the
UPDATE, COMMIT) and their Python hold the interpreter lock the outbound thread needs to refill its
places; see the architecture page. Elsewhere (SQLite, which has no SKIP LOCKED and lets one writer in at a time) the
ORM leases."""

from __future__ import annotations

import functools
from datetime import datetime, timedelta

from django.db import connection, transaction
from django.utils import timezone

from ..models import Delivery, target_key
from .load import _LOADED, _TARGETS, _loaded, _ready_to_send
from .send import ATTEMPT_DEADLINE

# A leased row is not re-driven before this: longer than a run's time budget (deliver_due's
# max_seconds, 50 s, during which a leased row is sent or goes back) plus one attempt's deadline.
LEASE = timedelta(seconds=ATTEMPT_DEADLINE * 6)


def _lease(batch_size: int) -> list[int]:
    return [pk for pk, _ in _lease_rows(batch_size)]


def _lease_rows(batch_size: int) -> list[tuple[int, str]]:
    """Up to `batch_size` due deliveries, leased (their next_attempt_at moved LEASE ahead, so no
    other engine takes them meanwhile): (delivery pk, target key), oldest due first. Rows another
    engine holds locked are skipped (SKIP LOCKED), not waited for."""
    now = timezone.now()
    with transaction.atomic():
        rows = list(
            _due(Delivery.objects.select_for_update(skip_locked=True), now, batch_size).values_list(
                "pk", "subscription_id", "endpoint_id"
            )
        )
        _move(Delivery.objects.filter(pk__in=[pk for pk, _, _ in rows]), now)
    return [(pk, target_key(sub_id, endpoint_id)) for pk, sub_id, endpoint_id in rows]


def _due(deliveries, now, batch_size: int):
    """Up to `batch_size` of `deliveries` that are due at `now`, oldest due first."""
    return deliveries.filter(status=Delivery.Status.PENDING, next_attempt_at__lte=now).order_by(
        "next_attempt_at", "pk"
    )[:batch_size]


def _move(leased, now) -> None:
    """The lease itself: `leased` rows are not due again before LEASE has passed."""
    leased.update(next_attempt_at=now + LEASE)


def _due_cte() -> str:
    """`due`: up to a batch of due rows (id, due_at), oldest due first, locked (SKIP LOCKED) for the
    UPDATE that leases them; its parameters are `_lease_params`' first three. MATERIALIZED: a
    subquery joined to the UPDATE may be re-scanned, and a re-scan of SKIP LOCKED ... LIMIT can
    return other rows (more than the limit leased)."""
    q = connection.ops.quote_name
    table = q(Delivery._meta.db_table)
    d = {name: q(Delivery._meta.get_field(name).column) for name in ("id", "next_attempt_at", "status")}
    # identifiers from the model's own metadata, quoted; every value is a parameter
    return (
        f"WITH due AS MATERIALIZED (SELECT {d['id']} AS id, {d['next_attempt_at']} AS due_at "  # noqa: S608
        f"FROM {table} WHERE {d['status']} = %s AND {d['next_attempt_at']} <= %s "
        f"ORDER BY {d['next_attempt_at']} LIMIT %s FOR UPDATE SKIP LOCKED)"
    )


def _lease_params(now: datetime, batch_size: int) -> list:
    """The due CTE's parameters, then the lease's new next_attempt_at."""
    return [str(Delivery.Status.PENDING), now, batch_size, now + LEASE]


def _lease_and_load(batch_size: int) -> list[Delivery]:
    """Up to `batch_size` due deliveries leased as `_lease_rows` leases them and read with their
    targets as they are now, oldest due first; then sorted out as `_load` does (`_ready_to_send`).
    On PostgreSQL one statement leases and reads; elsewhere the locking query reads them."""
    now = timezone.now()
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(_lease_and_load_sql(), _lease_params(now, batch_size))
            found = cursor.fetchall()
        found.sort(key=lambda values: values[:2])  # RETURNING keeps no order: the due date, then the pk
        return _ready_to_send([_row(values[1:]) for values in found])
    with transaction.atomic():
        rows = list(_due(_loaded(Delivery.objects.select_for_update(skip_locked=True, of=("self",))), now, batch_size))
        _move(Delivery.objects.filter(pk__in=[row.pk for row in rows]), now)
    return _ready_to_send(rows)


def _row(values: tuple) -> Delivery:
    """A leased delivery from `_lease_and_load_sql`'s columns (after the due date), with its
    subscription or endpoint, built as the ORM builds loaded rows (`Model.from_db`)."""
    alias = connection.alias
    count = len(_LOADED[Delivery])
    row = Delivery.from_db(alias, _LOADED[Delivery], values[:count])
    for relation, model in _TARGETS:
        target = values[count : count + len(_LOADED[model])]
        count += len(_LOADED[model])
        if target[_LOADED[model].index("id")] is not None:  # the row's subscription, or its endpoint
            setattr(row, relation, model.from_db(alias, _LOADED[model], target))
    return row


@functools.cache
def _lease_and_load_sql() -> str:
    """Up to a batch of due rows locked (SKIP LOCKED) and leased, returned joined to their
    subscription or endpoint as they are now (a data-modifying CTE: an UPDATE's FROM cannot outer-join
    the table it updates). Columns: the due date, then `_LOADED`'s of each model in turn."""
    q = connection.ops.quote_name
    d = {
        name: q(Delivery._meta.get_field(name).column) for name in ("id", "next_attempt_at", "subscription", "endpoint")
    }

    def columns(model, alias: str) -> str:
        return ", ".join(f"{q(alias)}.{q(model._meta.get_field(name).column)}" for name in _LOADED[model])

    def joined(model, alias: str, foreign_key: str) -> str:
        table, pk = q(model._meta.db_table), q(model._meta.pk.column)
        return f"LEFT JOIN {table} AS {q(alias)} ON {q(alias)}.{pk} = leased.{foreign_key}"

    # identifiers from the models' own metadata, quoted; every value is a parameter
    return (
        f"{_due_cte()}, leased AS (UPDATE {q(Delivery._meta.db_table)} AS {q('delivery')} "  # noqa: S608
        f"SET {d['next_attempt_at']} = %s FROM due WHERE {q('delivery')}.{d['id']} = due.id "
        f"RETURNING due.due_at, {columns(Delivery, 'delivery')}) "
        f"SELECT leased.*, {', '.join(columns(model, relation) for relation, model in _TARGETS)} FROM leased "
        f"{' '.join(joined(model, relation, d[relation]) for relation, model in _TARGETS)}"
    )


def _release(ids: list[int]) -> None:
    """Leased rows we did not get to go back to the queue now."""
    if ids:
        Delivery.objects.filter(pk__in=ids, status=Delivery.Status.PENDING).update(next_attempt_at=timezone.now())
