"""A `deliver_due` run: leased rows attempted with up to `concurrency` in flight on the outbound
thread, one endpoint under its share of them, the finished ones recorded from the calling thread
(`_PoolRun`); or inline, one at a time (`concurrency=1`, tests)."""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from queue import Empty, SimpleQueue

from django.conf import settings

from ..models import Delivery
from . import record, send
from .kinds import kind_of
from .lease import _lease, _lease_and_load, _release
from .load import _load
from .send import Outcome, _conclude, _send, _Started

logger = logging.getLogger(__package__)  # the engine's one logger, named as its package


def attempt_delivery(delivery_pk: int) -> str:
    """One attempt of one leased delivery, inline. Returns the resulting status (or "gone")."""
    rows = _load([delivery_pk])
    if not rows:
        return "gone"
    return record._record([_send(rows[0])])[0]


def deliver_due(
    *,
    max_seconds: float = 50.0,
    concurrency: int | None = None,
    batch_size: int = 64,
    per_endpoint: int | None = None,
) -> int:
    """Send due deliveries until none are due or the time budget is spent. Keeps up to
    `concurrency` attempts in flight (default WEBHOOK_CONCURRENCY) on the outbound thread and
    refills as they finish; the finished ones are recorded together, from this thread.
    `concurrency=1` runs inline (in the caller's thread and transaction: used by tests).

    One endpoint has at most `per_endpoint` attempts in flight (default three quarters of the
    places; fewer when its kind says so: `max_in_flight`), so an endpoint that answers slowly,
    however many deliveries it has, always leaves places to the others; its rows wait in the leased
    queue, in order, while the others' are sent.
    Returns the number of attempts made."""
    deadline = time.monotonic() + max_seconds
    concurrency = concurrency or settings.WEBHOOK_CONCURRENCY
    if concurrency <= 1:
        return _deliver_inline(deadline=deadline, batch_size=batch_size)
    run = _PoolRun(
        concurrency=concurrency,
        batch_size=batch_size,
        per_endpoint=per_endpoint or endpoint_share(concurrency),
    )
    return run.until(deadline)


def endpoint_share(concurrency: int) -> int:
    """The places one endpoint may hold of a run's `concurrency`: three quarters, so an endpoint
    that answers slowly always leaves a quarter to the others."""
    return max(1, concurrency * 3 // 4)


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
    twice `concurrency`; the places that bound keeps empty are filled by the calling thread once it
    has written them, before it waits again. `lock` guards the queue and the counts, which both
    threads change."""

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
    # endpoints whose kind holds them under a smaller share than `per_endpoint` (max_in_flight)
    shares: dict[str, int] = field(default_factory=dict)

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
                    if in_time:
                        # the places the bound on unwritten attempts kept empty above (and on the
                        # outbound thread) are filled now that they are written: waiting in `_collect`
                        # first would leave them empty until some other attempt ends
                        self._start_queued()
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
            min(count, self.shares.get(sub_id, self.per_endpoint) - self.in_flight[sub_id])
            for sub_id, count in self.queued.items()
            if self.in_flight[sub_id] < self.shares.get(sub_id, self.per_endpoint)
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
                shares = {}
                for row in rows:
                    cap = kind_of(row).max_in_flight if row.endpoint_id else None
                    if cap is not None and cap < self.per_endpoint:
                        shares[row.target_key] = cap
                with self.lock:
                    self.preloaded.update((row.pk, row) for row in rows)
                    self.queue += [(row.pk, row.target_key) for row in rows]
                    self.queued.update(row.target_key for row in rows)
                    self.shares.update(shares)
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
            if counts[sub_id] < self.shares.get(sub_id, self.per_endpoint):
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
        rows = [self.preloaded.pop(pk) for pk in take]
        # Every place taken is counted before the first attempt starts: an attempt answered before
        # its callback is added runs `_finished` here, on this thread, and that refill must see the
        # places of the rows still to start below as taken.
        self.in_flight = counts
        self.busy += len(rows)
        for row in rows:
            try:
                attempt = send._start(row)
            except Exception as exc:  # a bug, not a transport failure: the row comes back after LEASE
                logger.error("webhook attempt crashed: %s", exc.__class__.__name__)
                self._free(row.target_key)
                self.done += 1
                continue
            self.running[attempt] = row.target_key
            if attempt.call is None:  # ended before anything was sent: it took no place
                self._free(row.target_key)
                self.unwritten += 1
                self.finished.put((attempt, time.monotonic()))
                continue
            attempt.call.add_done_callback(lambda _, attempt=attempt: self._finished(attempt))

    def _free(self, sub_id: str) -> None:
        """Give back a place (and the endpoint's share of it). Called with the lock held."""
        self.in_flight[sub_id] -= 1
        self.busy -= 1

    def _finished(self, attempt: _Started) -> None:
        """An attempt's answer (or failure) came, on the outbound thread: its place is freed and
        refilled from the queue at once, unless the run is past its time or has stopped, or more than
        `concurrency` finished attempts wait to be written (the bound `until` keeps)."""
        ended = time.monotonic()
        try:
            with self.lock:
                self._free(self.running[attempt])
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
