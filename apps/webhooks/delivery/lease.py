"""The lease: due rows taken by one engine (their `next_attempt_at` moved LEASE ahead, so no other
engine takes them meanwhile), and loaded with their targets; on PostgreSQL in one statement."""

from __future__ import annotations

import functools
from datetime import datetime, timedelta

from django.db import connection, transaction
from django.utils import timezone

from apps.core.statements import run_prepared

from ..models import Delivery, target_key
from .load import _LOADED, _RELATIONS, _TARGETS, _built, _load, _ready_to_send
from .send import ATTEMPT_DEADLINE

# A leased row is not re-driven before this: longer than a run's time budget (deliver_due's
# max_seconds, 50 s, during which a leased row is sent or goes back) plus one attempt's deadline.
LEASE = timedelta(seconds=ATTEMPT_DEADLINE * 6)


def _lease(batch_size: int) -> list[int]:
    return [pk for pk, _ in _lease_rows(batch_size)]


def _lease_rows(batch_size: int) -> list[tuple[int, str]]:
    """Up to `batch_size` due deliveries, leased (their next_attempt_at moved LEASE ahead, so no
    other engine takes them meanwhile): (delivery pk, target key), oldest due first."""
    now = timezone.now()
    if connection.vendor == "postgresql":
        return _lease_rows_in_one_statement(now, batch_size)
    with transaction.atomic():
        rows = list(
            Delivery.objects.select_for_update(skip_locked=True)
            .filter(status=Delivery.Status.PENDING, next_attempt_at__lte=now)
            .order_by("next_attempt_at")
            .values_list("pk", "subscription_id", "endpoint_id")[:batch_size]
        )
        if rows:
            Delivery.objects.filter(pk__in=[pk for pk, _, _ in rows]).update(next_attempt_at=now + LEASE)
    return [(pk, target_key(sub_id, endpoint_id)) for pk, sub_id, endpoint_id in rows]


_LEASE_COLUMNS = ("id", "next_attempt_at", "status", "subscription", "endpoint")


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


def _no_disk_wait() -> str:
    """A condition (always true) that makes the engine's lease and record statements commit without
    waiting for the disk (synchronous_commit off for their own transaction only; inside an atomic
    block, where the statement is not its own transaction, nothing changes). A crash of the database
    server (not of a worker) can then lose the last fraction of a second of leases and attempt
    records: those deliveries are due again and sent again, with the same idempotency key, as after a
    killed worker; no delivery row is lost (fan-out's writes keep waiting for the disk). The flush
    is most of each statement's time on the path of every attempt."""
    if connection.in_atomic_block:
        return "TRUE"
    return "set_config('synchronous_commit', 'off', true) <> ''"


def _lease_rows_in_one_statement(now: datetime, batch_size: int) -> list[tuple[int, str]]:
    """`_lease_rows` on PostgreSQL: select (SKIP LOCKED) and lease in one UPDATE ... RETURNING, one
    round trip instead of four (BEGIN, SELECT, UPDATE, COMMIT) on the path from commit to the
    first attempt."""
    table = connection.ops.quote_name(Delivery._meta.db_table)
    column = {name: connection.ops.quote_name(Delivery._meta.get_field(name).column) for name in _LEASE_COLUMNS}
    # identifiers from the model's own metadata, quoted; every value is a parameter
    sql = (
        f"{_due_cte()} UPDATE {table} AS leased SET {column['next_attempt_at']} = %s FROM due "  # noqa: S608
        f"WHERE leased.{column['id']} = due.id AND {_no_disk_wait()} "
        f"RETURNING leased.{column['id']}, leased.{column['subscription']}, leased.{column['endpoint']}, due.due_at"
    )
    rows = run_prepared(sql, _lease_params(now, batch_size))
    rows.sort(key=lambda row: (row[3], row[0]))  # RETURNING keeps no order: oldest due first
    return [(pk, target_key(subscription_id, endpoint_id)) for pk, subscription_id, endpoint_id, _ in rows]


def _lease_and_load(batch_size: int) -> list[Delivery]:
    """`_lease_rows` then `_load`, oldest due first. On PostgreSQL in one statement, whose rows are
    built without the ORM's query: the load after each lease (a query the ORM built anew, its rows
    populated with their targets, and a round trip) was a fifth of a run thread's time."""
    if connection.vendor != "postgresql":
        order = {pk: n for n, (pk, _) in enumerate(_lease_rows(batch_size))}
        return sorted(_load(list(order)), key=lambda row: order[row.pk])
    rows = []
    alias = connection.alias
    for due_at, *values in run_prepared(
        _lease_and_load_sql(_no_disk_wait()), _lease_params(timezone.now(), batch_size)
    ):
        row = _built(Delivery, values[: len(_LOADED[Delivery])], alias)
        rest = values[len(_LOADED[Delivery]) :]
        for relation, model in _TARGETS:
            target, rest = rest[: len(_LOADED[model])], rest[len(_LOADED[model]) :]
            if target[0] is not None:  # its id: the row's subscription or its endpoint
                _RELATIONS[relation].set_cached_value(row, _built(model, target, alias))
        rows.append((due_at, row.pk, row))
    rows.sort(key=lambda entry: entry[:2])  # RETURNING keeps no order
    return _ready_to_send([row for *_, row in rows])


@functools.cache
def _lease_and_load_sql(no_disk_wait: str) -> str:
    """The lease of `_lease_rows_in_one_statement` returning the leased rows, joined to their
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
        f"SET {d['next_attempt_at']} = %s FROM due WHERE {q('delivery')}.{d['id']} = due.id AND {no_disk_wait} "
        f"RETURNING due.due_at, {columns(Delivery, 'delivery')}) "
        f"SELECT leased.*, {', '.join(columns(model, relation) for relation, model in _TARGETS)} FROM leased "
        f"{' '.join(joined(model, relation, d[relation]) for relation, model in _TARGETS)}"
    )


def _release(ids: list[int]) -> None:
    """Leased rows we did not get to go back to the queue now."""
    if ids:
        Delivery.objects.filter(pk__in=ids, status=Delivery.Status.PENDING).update(next_attempt_at=timezone.now())
