"""The delivery engine. The Delivery rows written by fan-out and redelivery are the source of truth:
`deliver_due` sends every row whose `next_attempt_at` has passed, leasing it first (the lease moves
`next_attempt_at` forward), so a lost Celery message or a killed worker delays a delivery by at most
the lease, never loses it; the beat sweeper triggers `deliver_due` while due rows exist. Up to
`concurrency` attempts are in flight at once on the guarded client's outbound thread (`submit_bytes`:
one pooled session per process, libcurl), so a slow endpoint holds one place, not the batch; one
endpoint holds at most three quarters of the places. The calling thread leases and loads; a finished
attempt's place is refilled (signed and started) on the outbound thread as its answer comes, and the
calling thread writes the finished attempts meanwhile.

A row goes to a subscription or to an `Endpoint` of a higher app (an external operator's URL): the
same lease, attempts, retries and log; the endpoint's `mode` holds or drops its rows, and its owner
hears (`on_endpoint_settled`) when one of its rows reached a final state.

Fan-out hands its new rows to `send_new` once its transaction commits: the fan-out's process leases
them by their delivery ids (one statement on PostgreSQL, which also reads the subscription as it is
now) and attempts them at once, with no trigger, task, lease-by-due-date or load in between; more
than NEW_AT_ONCE rows, or rows it could not lease, are left to `deliver_due`. A process that dies
after the commit leaves its rows due (never leased) or leased (back after LEASE): the sweeper sends
them either way.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from queue import Empty, SimpleQueue

from django.db import connection, transaction
from django.utils import timezone

from apps.core.statements import run_prepared

from ..models import Delivery, Subscription
from . import lease, load, record, secret_cache, send, settle, sweep
from .lease import (
    LEASE,
    _lease,
    _lease_and_load,
    _lease_rows,
    _no_disk_wait,
    _release,
)
from .load import _SEND_FIELDS, _load, skip_endpoint_rows
from .record import (
    MAX_ATTEMPTS,
    _record,
    retry_wait,
)
from .send import (
    ATTEMPT_DEADLINE,
    RESPONSE_CAP,
    RESPONSE_EXCERPT_BYTES,
    TIMEOUT,
    Outcome,
    _conclude,
    _send,
    _Started,
    close_session,
    response_excerpt,
)
from .settle import on_endpoint_settled
from .sweep import DELIVER_TASK, has_due, trigger

logger = logging.getLogger(__name__)


# Of one fan-out's new rows, at most this many are attempted by the fan-out's own process; the others
# are left to `deliver_due`. As many as a fan-out batch (events.FAN_OUT_BATCH) has events: at 64, a
# backlog of fan-out tasks held every batch's last 36 rows behind the whole queue of fan-outs (the
# worker's processes were busy with them), so they went out last, after all the others.
NEW_AT_ONCE = 100


def attempt_delivery(delivery_pk: int) -> str:
    """One attempt of one leased delivery, inline. Returns the resulting status (or "gone")."""
    rows = _load([delivery_pk])
    if not rows:
        return "gone"
    return record._record([_send(rows[0])])[0]


def deliver_due(
    *, max_seconds: float = 50.0, concurrency: int = 16, batch_size: int = 64, per_endpoint: int | None = None
) -> int:
    """Send due deliveries until none are due or the time budget is spent. Keeps up to
    `concurrency` attempts in flight on the outbound thread and refills as they finish; the
    finished ones are recorded together, from this thread. `concurrency=1` runs inline (in the
    caller's thread and transaction: used by tests).

    One endpoint has at most `per_endpoint` attempts in flight (default three quarters of the
    places), so an endpoint that answers slowly, however many deliveries it has, always leaves
    places to the others; its rows wait in the leased queue while the others' are sent.
    Returns the number of attempts made."""
    deadline = time.monotonic() + max_seconds
    if concurrency <= 1:
        return _deliver_inline(deadline=deadline, batch_size=batch_size)
    run = _PoolRun(
        concurrency=concurrency,
        batch_size=batch_size,
        per_endpoint=per_endpoint or max(1, concurrency * 3 // 4),
    )
    return run.until(deadline)


def send_new(rows: list[Delivery], *, concurrency: int = 16, max_seconds: float = 50.0) -> int:
    """Attempt fan-out's new rows (committed, subscriptions' rows, as fan-out built them) in this
    process now: the first NEW_AT_ONCE are leased by their delivery ids, with their subscription's
    current url and secret, and sent (inline when there is one, else in flight together, each endpoint
    under its share of it); `deliver_due` is triggered for the rest. A row another engine leased
    meanwhile, or whose subscription was deactivated, is left alone (the engine drops the latter).
    Returns the number of attempts made. Best effort: on any failure the rows not leased stay due
    and the leased ones come back after LEASE."""
    try:
        rows = [row for row in rows if row.status == Delivery.Status.PENDING]
        if len(rows) > NEW_AT_ONCE:
            sweep.trigger()
        leased = _lease_new(rows[:NEW_AT_ONCE])
        if not leased:
            return 0
        if concurrency <= 1 or len(leased) == 1:
            for row in leased:
                record._record([_send(row)])
            return len(leased)
        run = _PoolRun(
            concurrency=concurrency,
            batch_size=NEW_AT_ONCE,
            per_endpoint=max(1, concurrency * 3 // 4),
            queue=[(row.pk, row.target_key) for row in leased],
            preloaded={row.pk: row for row in leased},
            leases=False,
        )
        return run.until(time.monotonic() + max_seconds)
    except Exception:
        logger.exception("sending new webhook deliveries failed; the engine will pick them up")
        sweep.trigger()
        return 0


def _lease_new(rows: list[Delivery]) -> list[Delivery]:
    """Lease the new rows still due (their pks set from the database, their subscriptions' url and
    secret refreshed): one UPDATE ... RETURNING on PostgreSQL, a transaction elsewhere."""
    if not rows:
        return []
    now = timezone.now()
    by_delivery_id = {row.delivery_id: row for row in rows}
    if connection.vendor == "postgresql":
        found = _lease_new_in_one_statement(list(by_delivery_id), now)
    else:
        with transaction.atomic():
            found = list(
                Delivery.objects.select_for_update(skip_locked=True)
                .filter(
                    delivery_id__in=list(by_delivery_id),
                    status=Delivery.Status.PENDING,
                    next_attempt_at__lte=now,
                    subscription__is_active=True,
                )
                .values_list("pk", "delivery_id", "subscription__url", "subscription__secret_encrypted")
            )
            if found:
                Delivery.objects.filter(pk__in=[pk for pk, *_ in found]).update(next_attempt_at=now + LEASE)
    leased = []
    for pk, delivery_id, url, secret in found:
        row = by_delivery_id[delivery_id]
        row.pk = pk
        row.next_attempt_at = now + LEASE
        row.subscription.url, row.subscription.secret_encrypted = url, secret
        leased.append(row)
    leased.sort(key=lambda row: row.pk)
    return leased


def _lease_new_in_one_statement(delivery_ids: list, now: datetime) -> list[tuple]:
    """`_lease_new` on PostgreSQL: lock (SKIP LOCKED), lease and read in one statement."""
    q = connection.ops.quote_name
    table, subscriptions = q(Delivery._meta.db_table), q(Subscription._meta.db_table)
    d = {name: q(Delivery._meta.get_field(name).column) for name in _LEASE_NEW_COLUMNS}
    s = {name: q(Subscription._meta.get_field(name).column) for name in ("id", "url", "secret_encrypted", "is_active")}
    # identifiers from the models' own metadata, quoted; every value is a parameter
    sql = (
        f"WITH mine AS MATERIALIZED (SELECT {d['id']} AS id FROM {table} "  # noqa: S608
        f"WHERE {d['delivery_id']} = ANY(%b) AND {d['status']} = %s AND {d['next_attempt_at']} <= %s "
        f"FOR UPDATE SKIP LOCKED) "
        f"UPDATE {table} AS leased SET {d['next_attempt_at']} = %s FROM mine, {subscriptions} AS sub "
        f"WHERE leased.{d['id']} = mine.id AND sub.{s['id']} = leased.{d['subscription']} AND sub.{s['is_active']} "
        f"AND {_no_disk_wait()} "
        f"RETURNING leased.{d['id']}, leased.{d['delivery_id']}, sub.{s['url']}, sub.{s['secret_encrypted']}"
    )
    return run_prepared(sql, [delivery_ids, str(Delivery.Status.PENDING), now, now + LEASE])


_LEASE_NEW_COLUMNS = ("id", "delivery_id", "status", "next_attempt_at", "subscription")


def _deliver_inline(*, deadline: float, batch_size: int) -> int:
    done = 0
    while time.monotonic() < deadline:
        ids = _lease(batch_size)
        if not ids:
            break
        for pk in ids:
            attempt_delivery(pk)
            done += 1
    return done


@dataclass
class _PoolRun:
    """One `deliver_due` run. Leased rows wait in `queue` (delivery, endpoint) until a place is
    free (fewer than `concurrency` attempts unfinished, `busy`) and their endpoint is under its share
    (`in_flight`); `running` maps each attempt started and not yet collected to its endpoint. The
    lease, the load and the record happen on the calling thread (`_write`). A leased group is loaded
    (with its endpoints as they are then) in one query right after its lease, not a few rows at a time
    as places free up: at a few hundred attempts a second those small loads were most of this thread's
    time, and the attempts waited for it.

    A finished attempt's place is refilled where it finished, on the outbound thread (`_finished`),
    from the rows queued and loaded already: no database work, only the next row's signature. When
    the calling thread did it, a place stayed empty from the answer until that thread had woken, taken
    the interpreter lock and signed. The calling thread still fills the places the queue could not (leasing more),
    collects and records. No attempt starts while more than `concurrency` finished ones are unwritten,
    so started and unrecorded attempts (what a killed process sends twice) never number more than
    twice `concurrency`. `lock` guards the queue and the counts, which both threads change."""

    concurrency: int
    batch_size: int
    per_endpoint: int
    running: dict[_Started, str] = field(default_factory=dict)
    in_flight: Counter[str] = field(default_factory=Counter)
    # attempts started and not finished: the places taken
    busy: int = 0
    queue: list[tuple[int, str]] = field(default_factory=list)
    done: int = 0
    # the queued rows, loaded (pk -> row)
    preloaded: dict[int, Delivery] = field(default_factory=dict)
    # False for `send_new`'s run: its rows are leased and loaded already; nothing more is leased
    leases: bool = True
    # the attempts that finished and are not yet collected (each future puts itself here)
    finished: SimpleQueue = field(default_factory=SimpleQueue)
    # attempts finished and not yet written (`_write`): a refill waits while more than `concurrency`
    unwritten: int = 0
    # nothing is started after this (monotonic), nor once the run has stopped
    deadline: float = float("inf")
    stopped: bool = False
    # re-entrant: a future already done when its callback is added runs the callback at once
    lock: threading.RLock = field(default_factory=threading.RLock)
    # rows in `queue` per endpoint (kept with it): how many may start now is known without a scan
    queued: Counter[str] = field(default_factory=Counter)

    def __post_init__(self) -> None:
        self.queued.update(sub_id for _, sub_id in self.queue)

    def until(self, deadline: float) -> int:
        self.deadline = deadline
        finished: list[Outcome] = []
        try:
            while True:
                # Past the time budget nothing more is leased or started: the running attempts finish
                # and the queue goes back (so no row waits in it longer than the budget: LEASE covers it).
                in_time = time.monotonic() < deadline
                if in_time:
                    self._start_more()
                # the finished attempts are recorded after their places are refilled, while the new
                # ones are in flight: started and unrecorded attempts (what a killed process sends
                # twice) never number more than twice `concurrency`
                self._write(finished)
                finished = []
                with self.lock:
                    idle, queued = not self.running, bool(self.queue)
                if idle:
                    if queued and in_time:
                        continue
                    break
                finished = self._collect()
        except BaseException:
            self._stop()
            raise
        queued = self._stop()
        _release([pk for pk, _ in queued])
        return self.done

    def _stop(self) -> list[tuple[int, str]]:
        """No attempt starts from now on (the outbound thread's refills included); returns the queue."""
        with self.lock:
            self.stopped = True
            queued, self.queue = self.queue, []
            self.queued.clear()
        return queued

    def _write(self, outcomes: list[Outcome]) -> None:
        """Record finished attempts, here. A recorder thread with a connection of its own wrote them
        while this thread refilled the places; once the outbound thread refilled them, it only took
        the interpreter lock from that thread, and a run without it sent a fifth more attempts a second. A
        failed write ends the run with its error (the rows not written are sent again after LEASE, as
        after a killed worker)."""
        if not outcomes:
            return
        try:
            record._record(outcomes)
        finally:
            with self.lock:
                self.unwritten -= len(outcomes)

    def _startable(self) -> int:
        """How many queued rows their endpoints' shares let start now (places aside)."""
        return sum(
            min(count, self.per_endpoint - self.in_flight[sub_id])
            for sub_id, count in self.queued.items()
            if self.in_flight[sub_id] < self.per_endpoint
        )

    def _start_more(self) -> None:
        """Lease more rows when the queue cannot fill the free places (the lease and its load outside
        the lock, while finishing attempts keep refilling from the queue); then fill the free places."""
        with self.lock:
            free = self.concurrency - self.busy
            short = self._startable() < free and len(self.queue) < self.batch_size * 4
        if not free:
            return
        if self.leases and short:
            rows = _lease_and_load(self.batch_size)
            if rows:
                with self.lock:
                    self.preloaded.update((row.pk, row) for row in rows)
                    self.queue += [(row.pk, row.target_key) for row in rows]
                    self.queued.update(row.target_key for row in rows)
        with self.lock:
            self._start_queued()

    def _start_queued(self) -> None:
        """Start queued rows in the free places, oldest first, each endpoint under its share. Called
        with the lock held. The queue is read only as far as the rows that start (`_startable` says how
        many): a refill starts one row, and reading the whole queue (a few hundred rows, most of them of
        an endpoint at its share) for it cost more than the attempt's signature."""
        wanted = min(self.concurrency - self.busy, self._startable())
        if wanted <= 0 or self.stopped or self.unwritten > self.concurrency:
            return
        take, skipped, counts = [], [], self.in_flight.copy()
        for index, (pk, sub_id) in enumerate(self.queue):  # noqa: B007 (the index is where the scan stopped)
            if counts[sub_id] < self.per_endpoint:
                take.append(pk)
                counts[sub_id] += 1
                self.queued[sub_id] -= 1
                if not self.queued[sub_id]:
                    del self.queued[sub_id]
                if len(take) == wanted:
                    break
            else:
                skipped.append((pk, sub_id))
        self.queue[: index + 1] = skipped  # the rows read and not taken keep their place, first
        for row in (self.preloaded.pop(pk) for pk in take):
            try:
                attempt = send._start(row)
            except Exception as exc:  # a bug, not a transport failure: the row comes back after LEASE
                logger.error("webhook attempt crashed: %s", exc.__class__.__name__)
                self.done += 1
                continue
            self.running[attempt] = row.target_key
            if attempt.call is None:  # ended before anything was sent: it took no place
                self.unwritten += 1
                self.finished.put((attempt, time.monotonic()))
                continue
            self.in_flight[row.target_key] += 1
            self.busy += 1
            attempt.call.add_done_callback(lambda _, attempt=attempt: self._finished(attempt))

    def _finished(self, attempt: _Started) -> None:
        """An attempt's answer (or failure) came, on the outbound thread: its place is freed and
        refilled from the queue at once, unless the run is past its time or has stopped, or more than
        `concurrency` finished attempts wait to be written (the bound `until` keeps)."""
        ended = time.monotonic()
        try:
            with self.lock:
                self.in_flight[self.running[attempt]] -= 1
                self.busy -= 1
                self.unwritten += 1
                self.finished.put((attempt, ended))
                if ended < self.deadline:
                    self._start_queued()
        except Exception:  # never on the outbound thread: the calling thread refills what is left
            logger.exception("webhook refill failed")

    def _collect(self) -> list[Outcome]:
        """The attempts finished by now: waits for the first, then takes every other one already
        done, without waiting more."""
        done = _first_and_waiting(self.finished)
        with self.lock:
            for attempt, _ in done:
                del self.running[attempt]
            self.done += len(done)
        outcomes = []
        for attempt, ended in done:
            try:
                outcomes.append(_conclude(attempt, ended))
            except Exception as exc:  # not a transport failure (those are outcomes): a bug, logged
                logger.error("webhook attempt crashed: %s", exc.__class__.__name__)
                with self.lock:
                    self.unwritten -= 1  # nothing to write: the row comes back after LEASE
        return outcomes


def _first_and_waiting(queue: SimpleQueue) -> list:
    """The queue's next item (waited for), then every other item already in it, without waiting."""
    items = [queue.get()]
    while True:
        try:
            items.append(queue.get_nowait())
        except Empty:
            return items


__all__ = [
    "ATTEMPT_DEADLINE",
    "DELIVER_TASK",
    "LEASE",
    "MAX_ATTEMPTS",
    "Outcome",
    "RESPONSE_CAP",
    "RESPONSE_EXCERPT_BYTES",
    "TIMEOUT",
    "_SEND_FIELDS",
    "_lease",
    "_lease_and_load",
    "_lease_rows",
    "_no_disk_wait",
    "_record",
    "close_session",
    "has_due",
    "lease",
    "load",
    "on_endpoint_settled",
    "record",
    "response_excerpt",
    "retry_wait",
    "secret_cache",
    "send",
    "settle",
    "skip_endpoint_rows",
    "sweep",
    "trigger",
]
