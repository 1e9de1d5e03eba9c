"""The record of finished attempts: each delivery's new state (delivered, failed, or pending until its
retry) and its Attempt row, written together; owners hear their endpoints' settled rows, and a
`deliver_due` run is asked for the earliest retry."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db import connection, transaction
from django.utils import timezone

from apps.platform import metrics

from ..models import Attempt, Delivery
from . import sweep
from .kinds import kind_of
from .send import Outcome
from .settle import _notify_failed, _notify_settled

MAX_ATTEMPTS = 4


def retry_wait(failed_attempt: int) -> int:
    """After failed attempt n (1, 2, 3): min(60, 2^n * 5) seconds: 10, 20, 40."""
    return min(60, 2**failed_attempt * 5)


def _record(outcomes: list[Outcome]) -> list[str]:
    """Write a set of finished attempts at once: Attempt rows and the deliveries' new state (one
    statement on PostgreSQL, one transaction elsewhere). Rows whose endpoint was deleted while the
    attempt ran are skipped ("gone")."""
    if not outcomes:
        return []
    now = timezone.now()
    waits: list[float] = []
    decided = []  # (outcome, number, new status, next attempt) per outcome
    for outcome in outcomes:
        number = outcome.delivery.attempts + 1
        kind = kind_of(outcome.delivery)
        if not outcome.error:
            status, next_at = Delivery.Status.DELIVERED, None
        elif outcome.permanent or number >= (kind.max_attempts or MAX_ATTEMPTS):
            status, next_at = Delivery.Status.FAILED, None
        else:
            wait = kind.retry_wait(number)
            wait = max(retry_wait(number) if wait is None else wait, outcome.retry_after or 0)
            status, next_at = Delivery.Status.PENDING, now + timedelta(seconds=wait)
        decided.append((outcome, number, status, next_at))
    if connection.vendor == "postgresql":
        alive = _write_in_one_statement(decided, now)
    else:
        alive = _write_with_the_orm(decided, now)
    statuses: list[str] = []
    counted: dict[str, list[str]] = {}  # statuses by their kinds' metric label
    settled: set[tuple[str, int]] = set()
    failed = []
    for outcome, _, status, next_at in decided:
        if outcome.delivery.pk not in alive:
            statuses.append("gone")
            continue
        statuses.append(status)
        counted.setdefault(kind_of(outcome.delivery).metric, []).append(status)
        if status == Delivery.Status.PENDING:
            waits.append((next_at - now).total_seconds())
        elif outcome.delivery.endpoint_id:
            settled.add((outcome.delivery.endpoint.owner, outcome.delivery.endpoint_id))
            if status == Delivery.Status.FAILED:
                failed.append(outcome.delivery)
    _notify_settled(settled)
    _notify_failed(failed)
    for label, written in counted.items():
        metrics.count_delivery_attempts(label, written)
    if waits:
        sweep.trigger(countdown=min(waits))
    return statuses


def _write_with_the_orm(decided: list, now: datetime) -> set[int]:
    """`_record`'s writes in one transaction: the rows still pending get their Attempt row and new
    state, updated in groups of the same new state (one UPDATE for all the successes of a batch):
    a per-row CASE (bulk_update) cost more than the attempts themselves. Returns the pks written."""
    with transaction.atomic():
        alive = set(
            Delivery.objects.filter(
                pk__in=[outcome.delivery.pk for outcome, *_ in decided], status=Delivery.Status.PENDING
            ).values_list("pk", flat=True)
        )
        attempts = []
        groups: dict[tuple, list[int]] = {}
        for outcome, number, status, next_at in decided:
            if outcome.delivery.pk not in alive:
                continue
            attempts.append(_attempt_row(outcome, number))
            groups.setdefault((status, number, next_at, outcome.status_code, outcome.error), []).append(
                outcome.delivery.pk
            )
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
    return alive


def _attempt_row(outcome: Outcome, number: int) -> Attempt:
    return Attempt(
        delivery_id=outcome.delivery.pk,
        number=number,
        started_at=outcome.started,
        duration_ms=outcome.duration_ms,
        status_code=outcome.status_code,
        error=outcome.error,
        response_excerpt=outcome.excerpt,
    )


# One array per column (unnest): the statement's text and its 10 parameters are the same whatever
# the number of outcomes, so psycopg parses it once per process. A VALUES list of 9 parameters a row
# was parsed anew every time (over 50 parameters psycopg does not cache a query), a fifth of the
# engine's coordinating thread.
_RECORD_ARRAYS = (
    "%s::bigint[], %s::integer[], %s::varchar[], %s::timestamptz[], %s::integer[], %s::varchar[], "
    "%s::timestamptz[], %s::integer[], %s::varchar[]"
)


def _write_in_one_statement(decided: list, now: datetime) -> set[int]:
    """`_record`'s writes on PostgreSQL in one statement (one round trip, no transaction to open
    and commit): the deliveries still pending take their new state (UPDATE ... FROM the outcomes'
    arrays) and exactly those get their Attempt row (INSERT ... SELECT joined on the UPDATE's
    RETURNING). A delivery deleted or no longer pending meanwhile gets neither. Returns the pks
    written."""
    q = connection.ops.quote_name
    delivery, attempt = q(Delivery._meta.db_table), q(Attempt._meta.db_table)
    d = {name: q(Delivery._meta.get_field(name).column) for name in _RECORD_DELIVERY_COLUMNS}
    a = {name: q(Attempt._meta.get_field(name).column) for name in _RECORD_ATTEMPT_COLUMNS}
    columns: list[list] = [[] for _ in range(9)]
    for outcome, number, status, next_at in decided:
        for column, value in zip(
            columns,
            (
                outcome.delivery.pk,
                number,
                str(status),
                next_at,
                outcome.status_code,
                outcome.error,
                outcome.started,
                outcome.duration_ms,
                outcome.excerpt,
            ),
            strict=True,
        ):
            column.append(value)
    # identifiers from the models' own metadata, quoted; every value is a parameter
    sql = (
        f"WITH v AS (SELECT * FROM unnest({_RECORD_ARRAYS}) "  # noqa: S608
        f"AS v (id, number, status, next_at, status_code, error, started_at, duration_ms, excerpt)), "
        f"written AS (UPDATE {delivery} AS row SET {d['status']} = v.status, {d['attempts']} = v.number, "
        f"{d['next_attempt_at']} = v.next_at, {d['last_status_code']} = v.status_code, "
        f"{d['last_error']} = v.error, {d['updated_at']} = %s "
        f"FROM v WHERE row.{d['id']} = v.id AND row.{d['status']} = %s RETURNING row.{d['id']} AS id) "
        f"INSERT INTO {attempt} ({a['delivery']}, {a['number']}, {a['started_at']}, {a['duration_ms']}, "
        f"{a['status_code']}, {a['error']}, {a['response_excerpt']}) "
        f"SELECT v.id, v.number, v.started_at, v.duration_ms, v.status_code, v.error, v.excerpt "
        f"FROM v JOIN written ON written.id = v.id RETURNING {a['delivery']}"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [*columns, now, str(Delivery.Status.PENDING)])
        return {pk for (pk,) in cursor.fetchall()}


_RECORD_DELIVERY_COLUMNS = (
    "id",
    "status",
    "attempts",
    "next_attempt_at",
    "last_status_code",
    "last_error",
    "updated_at",
)
_RECORD_ATTEMPT_COLUMNS = (
    "delivery",
    "number",
    "started_at",
    "duration_ms",
    "status_code",
    "error",
    "response_excerpt",
)
