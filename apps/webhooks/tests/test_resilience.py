"""The engine under failure: a flaky receiver, lost Celery triggers, expired leases, two engines at
once and a worker killed with SIGKILL mid-batch. No event may be lost; duplicates are bounded by
what was in flight and always carry the event's one idempotency key.

These tests commit (transaction=True): the engine's thread pool and the worker process must see
the rows. The ones running several writers at once need PostgreSQL (SQLite's in-memory test
database locks whole tables across threads); the kill test also needs Redis for the real broker.
"""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import threading
import time
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import wait as futures_wait
from contextlib import nullcontext
from datetime import timedelta
from pathlib import Path
from unittest import mock

import pytest
from django.db import DatabaseError, connection, connections, transaction
from django.utils import timezone

from apps.core import events as core_events
from apps.core.models import OutboxEvent, Widget
from apps.webhooks import delivery as engine
from apps.webhooks import services, signing, tasks
from apps.webhooks.models import Attempt, Delivery
from apps.webhooks.tests.killed_worker import expire_leases_and_backoffs, kill_mid_batch, sweep_until_settled
from apps.webhooks.tests.receiver import Hit, Receiver, Reply, always, flaky

ROOT = Path(__file__).resolve().parents[3]
CLIENT_GUID = "d" * 32


@pytest.fixture
def receiver(monkeypatch: pytest.MonkeyPatch, settings):
    settings.OUTBOUND_ALLOW_LOOPBACK = True
    with Receiver() as rx:
        monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(rx.ca_path))
        yield rx


@pytest.fixture(autouse=True)
def _collect_engine_connections():
    """Connections the engine's runs left to the garbage collector (see
    test_the_engine_does_not_leave_database_connections_open_run_after_run) are collected, so the
    test database can be flushed and dropped."""
    yield
    gc.collect()


@pytest.fixture
def lost_triggers(monkeypatch: pytest.MonkeyPatch) -> list[float | None]:
    """Every Celery trigger of the engine is lost (broker emptied), and so is the fan-out process's
    own attempt of its new rows (`send_new`: as if that process died right after its commit, before
    leasing them): only the sweeper is left. Recorded (the hand-over as an immediate trigger, None),
    so a test can see that one was asked for."""
    asked: list[float | None] = []
    monkeypatch.setattr(engine.sweep, "trigger", lambda countdown=None: asked.append(countdown))
    monkeypatch.setattr(engine, "send_new", lambda rows, **options: asked.append(None))
    return asked


@pytest.fixture
def pool_fit_for_the_database(monkeypatch: pytest.MonkeyPatch) -> None:
    """On SQLite the engine the sweeper starts runs inline: the in-memory test database is shared
    between threads with table locks that fail at once (no busy wait), so a real pool there tests
    SQLite's test set-up, not the engine. On PostgreSQL the real pool runs."""
    if connection.vendor == "sqlite":
        inline = services.deliver_due
        monkeypatch.setattr(services, "deliver_due", lambda **kw: inline(**{**kw, "concurrency": 1}))


def emit_messages(widget: Widget, count: int, *, bulk: bool = False) -> list[str]:
    """`count` message.created events committed in one transaction. The outbox hands each off on
    commit (eager Celery: the first task fans out the waiting events in one batch, the others find
    theirs done, as in production); with `bulk` the
    hand-off is skipped and all are fanned out in a single transaction (fast set-up of many rows).
    Returns the event ids (= idempotency keys)."""
    hand_off = mock.patch.object(core_events, "_hand_off", lambda event_id: None) if bulk else nullcontext()
    with hand_off, transaction.atomic():
        events = [
            core_events.emit(
                widget,
                "message.created",
                chat_id=n,
                message_id=n,
                client_id=CLIENT_GUID,
                author_type="USER",
                source="api",
            )
            for n in range(count)
        ]
    if bulk:
        with transaction.atomic():
            for event in events:
                core_events.fan_out(event.pk)
    assert not OutboxEvent.objects.filter(dispatched_at__isnull=True).exists()
    return [str(event.pk) for event in events]


def assert_signed(hits: list[Hit], secret: str) -> None:
    for hit in hits:
        assert signing.verify_service_signature(secret, hit.body, hit.header("X-Service-Signature")), hit.seq
        assert signing.verify_standard_signature(
            secret,
            hit.header("webhook-id"),
            int(hit.header("webhook-timestamp")),
            hit.body,
            hit.header("webhook-signature"),
        ), hit.seq


def assert_one_key_per_delivery(hits: list[Hit]) -> None:
    """Every request of a delivery carries the same idempotency key (== body id), and one key
    belongs to one delivery (one endpoint here)."""
    keys_of_delivery: dict[str, set[str]] = defaultdict(set)
    deliveries_of_key: dict[str, set[str]] = defaultdict(set)
    for hit in hits:
        assert hit.key == hit.json()["id"] == hit.header("webhook-id")
        keys_of_delivery[hit.delivery].add(hit.key)
        deliveries_of_key[hit.key].add(hit.delivery)
    assert all(len(keys) == 1 for keys in keys_of_delivery.values())
    assert all(len(ids) == 1 for ids in deliveries_of_key.values())


# --- the sweeper alone ------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_without_any_trigger_the_sweeper_alone_delivers_everything(
    widget, receiver, lost_triggers, pool_fit_for_the_database
):
    # given due deliveries whose Celery trigger was lost
    secret = services.create_subscription(widget=widget, url=receiver.url(), events=["message.created"])[1]
    keys = emit_messages(widget, 20)
    assert lost_triggers and set(lost_triggers) == {None}  # the fan-out (one batch here) asked for one
    time.sleep(0.2)
    assert receiver.hits == []
    # when only the beat sweeper runs (eager: its deliver_due runs here with the real thread pool)
    assert tasks.sweep_deliveries() is True
    # then everything was delivered once, and the next sweep finds nothing to do
    hits = receiver.wait_for(20)
    assert sorted(hit.key for hit in hits) == sorted(keys)
    assert_signed(hits, secret)
    assert set(Delivery.objects.values_list("status", flat=True)) == {"delivered"}
    assert tasks.sweep_deliveries() is False
    assert len(receiver.snapshot()) == 20


@pytest.mark.django_db(transaction=True)
def test_the_sweeper_picks_up_a_lease_whose_worker_died(widget, receiver, lost_triggers, pool_fit_for_the_database):
    # given deliveries leased by a worker that died before attempting them
    services.create_subscription(widget=widget, url=receiver.url(), events=["message.created"])
    keys = emit_messages(widget, 5)
    leased = engine.lease._lease(64)
    assert len(leased) == 5
    assert all(
        at > timezone.now() + services.LEASE - timedelta(seconds=5)
        for at in Delivery.objects.values_list("next_attempt_at", flat=True)
    )
    # when the sweeper runs while the lease holds
    # then it leaves them alone
    assert tasks.sweep_deliveries() is False
    assert receiver.hits == []
    # when the lease has run out
    expire_leases_and_backoffs()
    assert tasks.sweep_deliveries() is True
    # then they are picked up and delivered
    assert sorted(hit.key for hit in receiver.wait_for(5)) == sorted(keys)
    assert set(Delivery.objects.values_list("status", flat=True)) == {"delivered"}


@pytest.mark.django_db(transaction=True)
def test_retries_come_back_through_the_sweeper_when_their_trigger_is_lost(
    widget, receiver, lost_triggers, pool_fit_for_the_database
):
    # given an endpoint failing each event's first request, and lost triggers
    receiver.rule = lambda hit: 500 if hit.key_attempt == 1 else 200
    services.create_subscription(widget=widget, url=receiver.url(), events=["message.created"])
    keys = emit_messages(widget, 10)
    assert tasks.sweep_deliveries() is True
    assert Counter(Delivery.objects.values_list("status", flat=True)) == {"pending": 10}
    assert 10 in lost_triggers  # the failures asked for a trigger in 10 s (one per recorded set): lost
    # when the backoff is over and the sweeper runs
    assert tasks.sweep_deliveries() is False
    expire_leases_and_backoffs()
    assert tasks.sweep_deliveries() is True
    # then
    assert Counter(hit.key for hit in receiver.wait_for(20)) == {key: 2 for key in keys}
    assert Counter(Delivery.objects.values_list("status", flat=True)) == {"delivered": 10}


# --- a flaky receiver, many events ----------------------------------------------------------------


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_flaky_receiver_loses_no_event_across_1000_events(widget, receiver, lost_triggers):
    # given an endpoint failing about half of the requests (never four times in a row per event)
    receiver.rule = flaky(salt="resilience")
    secret = services.create_subscription(widget=widget, url=receiver.url(), events=["message.created"])[1]
    keys = emit_messages(widget, 1000, bulk=True)
    assert Delivery.objects.filter(status="pending").count() == 1000
    started = time.monotonic()
    # when the engine runs with its thread pool, round after round, backoffs cut short between rounds
    rounds = 0
    while Delivery.objects.filter(status=Delivery.Status.PENDING).exists():
        rounds += 1
        assert rounds <= 6, Counter(Delivery.objects.values_list("status", "attempts"))
        services.deliver_due(concurrency=16, batch_size=64)
        expire_leases_and_backoffs()
    # then every event was delivered exactly once (one 2xx per idempotency key), none failed
    hits = receiver.snapshot()
    successes = Counter(hit.key for hit in hits if hit.status == 200)
    assert len(successes) == 1000 and set(successes.values()) == {1}
    assert set(successes) == set(keys)
    assert Counter(Delivery.objects.values_list("status", flat=True)) == {"delivered": 1000}
    # about half of the requests failed, so retries really happened
    failures = sum(1 for hit in hits if hit.status != 200)
    assert 0.3 < failures / len(hits) < 0.7
    assert max(hit.key_attempt for hit in hits) == 4
    # the log agrees with the receiver: one Attempt row per request, attempts numbered 1..n
    assert Attempt.objects.count() == len(hits)
    per_key = Counter(hit.key for hit in hits)
    attempts = dict(Delivery.objects.values_list("event_id", "attempts"))
    assert {str(event_id): n for event_id, n in attempts.items()} == dict(per_key)
    # every request of an event carried its one key, and every request was correctly signed
    assert_one_key_per_delivery(hits)
    assert_signed(hits, secret)
    assert time.monotonic() - started < 60


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_two_engines_at_once_never_send_one_delivery_twice(widget, receiver, lost_triggers):
    # given 300 due deliveries and a receiver that takes a moment per request
    receiver.rule = always(200, delay=0.01)
    services.create_subscription(widget=widget, url=receiver.url(), events=["message.created"])
    keys = emit_messages(widget, 300, bulk=True)
    # when two engines (two workers) run at the same time
    with ThreadPoolExecutor(max_workers=2) as pool:
        done = list(pool.map(lambda _: services.deliver_due(concurrency=8, batch_size=16), range(2)))
    # then each delivery was sent once (leases with SKIP LOCKED keep them apart)
    assert sum(done) == 300
    assert Counter(hit.key for hit in receiver.snapshot()) == {key: 1 for key in keys}
    assert Attempt.objects.count() == 300


# --- a worker killed mid-batch ----------------------------------------------------------------------


@pytest.mark.postgres
@pytest.mark.redis
@pytest.mark.django_db(transaction=True)
def test_a_worker_killed_mid_batch_loses_nothing_and_duplicates_at_most_its_in_flight(
    widget, receiver, lost_triggers, tmp_path
):
    # given 200 due deliveries, a slow endpoint (200 ms), and a real worker on its own queue
    receiver.rule = always(200, delay=0.2)
    secret = services.create_subscription(widget=widget, url=receiver.url(), events=["message.created"])[1]
    keys = emit_messages(widget, 200, bulk=True)
    assert receiver.hits == []
    assert connection.vendor == "postgresql"
    # when the worker (16 places) runs deliver_due and is killed once some requests have reached the receiver
    in_flight = kill_mid_batch(receiver, tmp_path / "worker.log", after_hits=40, concurrency=16)
    # ... and the leases run out and the sweeper takes over in this process
    sweep_until_settled()
    # then no event is lost ...
    hits = receiver.snapshot()
    assert Counter(Delivery.objects.values_list("status", flat=True)) == {"delivered": 200}
    assert {hit.key for hit in hits} == set(keys)
    # ... duplicates are only the requests sent and not yet recorded when the worker died: at most
    # twice its 16 places (a finished group is recorded while the places it freed are in flight) ...
    duplicates = {key: n for key, n in Counter(hit.key for hit in hits).items() if n > 1}
    assert len(hits) == 200 + sum(n - 1 for n in duplicates.values())
    assert sum(n - 1 for n in duplicates.values()) == in_flight <= 32
    assert set(duplicates.values()) <= {2}
    # ... and each duplicate carried the event's one idempotency key and delivery id, correctly signed
    assert_one_key_per_delivery(hits)
    assert_signed(hits, secret)
    assert Attempt.objects.count() == 200


# --- what the engine's threads leave behind ----------------------------------------------------------


def _other_sessions() -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        return cursor.fetchone()[0]


def _settled(read, limit: int, timeout: float = 2.0) -> int:
    """`read()` once it is at most `limit`, or its value after `timeout` (closing takes a moment)."""
    deadline = time.monotonic() + timeout
    value = read()
    while value > limit and time.monotonic() < deadline:
        time.sleep(0.05)
        value = read()
    return value


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("conn_max_age", [0, 60])
def test_the_engine_does_not_leave_database_connections_open_run_after_run(
    widget, receiver, lost_triggers, monkeypatch, conn_max_age
):
    # given persistent connections or not (CONN_MAX_AGE from the environment), and the cyclic
    # garbage collector off: connections must be closed (or reused) by the engine itself, not
    # whenever a collection happens to run
    monkeypatch.setitem(connections.settings["default"], "CONN_MAX_AGE", conn_max_age)
    services.create_subscription(widget=widget, url=receiver.url(), events=["message.created"])
    gc.collect()
    before = _settled(_other_sessions, 0)
    gc.disable()
    try:
        # when the engine runs three times with a pool of 4 (a worker running the task repeatedly)
        for _ in range(3):
            emit_messages(widget, 8, bulk=True)
            assert services.deliver_due(concurrency=4) == 8
        # then at most one pool's worth of connections stays open
        after = _settled(_other_sessions, before + 4)
    finally:
        gc.enable()
        gc.collect()
    assert after - before <= 4, f"{after - before} database sessions left open by 3 runs of a 4-thread pool"


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_run_writes_its_attempts_on_its_own_thread_never_more_than_its_places_behind(
    widget, receiver, lost_triggers, monkeypatch
):
    # given 40 due deliveries, and each write of outcomes noted with the thread that made it and how
    # many attempts were started and not yet written when it began
    services.create_subscription(widget=widget, url=receiver.url(), events=["message.created"])
    emit_messages(widget, 40, bulk=True)
    record, writes = engine.record._record, []

    def noted(outcomes):
        unrecorded = len(receiver.snapshot()) - Attempt.objects.count()
        writes.append((threading.current_thread().name, len(outcomes), unrecorded))
        return record(outcomes)

    monkeypatch.setattr(engine.record, "_record", noted)
    # when a run with 4 places sends them (outside a transaction, as a worker's task runs)
    assert services.deliver_due(concurrency=4) == 40
    # then every outcome was written once, by the run's thread (the outbound thread refills the
    # places, it never writes), and no write found more than twice the places unrecorded
    assert {name for name, *_ in writes} == {threading.current_thread().name}
    assert sum(count for _, count, _ in writes) == 40
    assert max(unrecorded for *_, unrecorded in writes) <= 8
    assert Counter(Delivery.objects.values_list("status", flat=True)) == {"delivered": 40}
    assert sorted(Attempt.objects.values_list("number", flat=True)) == [1] * 40


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_failed_write_ends_the_run_and_its_rows_come_back_after_the_lease(
    widget, receiver, lost_triggers, monkeypatch
):
    # given 20 due deliveries and a database that refuses the run's writes
    services.create_subscription(widget=widget, url=receiver.url(), events=["message.created"])
    keys = emit_messages(widget, 20, bulk=True)
    record = engine.record._record

    def refused(outcomes):
        raise DatabaseError("the server closed the connection")

    monkeypatch.setattr(engine.record, "_record", refused)
    # when a run sends them, the failure is raised on the run's thread (the task fails, and is logged)
    with pytest.raises(DatabaseError, match="closed the connection"):
        services.deliver_due(concurrency=4)
    # then nothing was written: the rows are still leased, with no attempt logged
    assert not Delivery.objects.exclude(status="pending").exists()
    assert not Delivery.objects.filter(next_attempt_at__lte=timezone.now()).exists()
    assert not Attempt.objects.exists()
    # and once their leases run out the engine sends each again, with its one idempotency key
    monkeypatch.setattr(engine.record, "_record", record)
    expire_leases_and_backoffs()
    assert services.deliver_due(concurrency=4) == 20
    assert Counter(Delivery.objects.values_list("status", flat=True)) == {"delivered": 20}
    assert Attempt.objects.count() == 20
    assert {hit.key for hit in receiver.snapshot()} == set(keys)
    assert_one_key_per_delivery(receiver.snapshot())


@pytest.mark.django_db(transaction=True)
def test_the_engine_does_not_leave_http_connections_open_run_after_run(
    widget, receiver, lost_triggers, pool_fit_for_the_database
):
    # given (as above) the cyclic garbage collector off
    services.create_subscription(widget=widget, url=receiver.url(), events=["message.created"])
    gc.collect()
    concurrency = 1 if connection.vendor == "sqlite" else 4
    gc.disable()
    try:
        # when the engine runs three times
        for _ in range(3):
            emit_messages(widget, 8, bulk=True)
            assert services.deliver_due(concurrency=concurrency) == 8
        # then at most one pool's worth of keep-alive connections to the endpoint stays open
        still_open = _settled(lambda: receiver.connections_open, concurrency)
    finally:
        gc.enable()
        gc.collect()
    assert receiver.connections_opened >= 1
    assert still_open <= concurrency, f"{still_open} connections left open by 3 runs of a {concurrency}-thread pool"


def test_an_attempt_that_crashes_before_sending_holds_back_no_other(
    widget, receiver, lost_triggers, monkeypatch, caplog
):
    # given six due deliveries, one of which breaks the engine while it is being signed (a bug)
    services.create_subscription(widget=widget, url=receiver.url(), events=["message.created"])
    emit_messages(widget, 6, bulk=True)
    broken = Delivery.objects.order_by("pk").values_list("pk", flat=True)[2]
    start = engine.send._start

    def start_unless_broken(row):
        if row.pk == broken:
            raise RuntimeError("a bug")
        return start(row)

    monkeypatch.setattr(engine.send, "_start", start_unless_broken)
    # when the engine runs with several attempts in flight
    done = services.deliver_due(concurrency=4)
    # then the others were sent and recorded, the broken one is logged and left leased (the sweeper
    # takes it again once its lease runs out), and nothing was sent for it
    assert done == 6
    assert Counter(Delivery.objects.exclude(pk=broken).values_list("status", flat=True)) == {"delivered": 5}
    left = Delivery.objects.get(pk=broken)
    assert (left.status, left.attempts) == ("pending", 0)
    assert left.next_attempt_at > timezone.now()
    hits = receiver.snapshot()
    assert len(hits) == 5
    assert left.idempotency_key not in {hit.key for hit in hits}
    assert "webhook attempt crashed: RuntimeError" in caplog.text


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_an_attempt_answered_before_its_callback_is_added_takes_no_more_places(
    widget, receiver, lost_triggers, monkeypatch
):
    # given 12 due deliveries to one endpoint (its share: 3 of the 4 places), answers that take 0.3 s
    # but the first one, and a calling thread paused after handing over the first attempt until it
    # is answered (as when the scheduler preempts it there): its refill runs on that thread, in the
    # middle of starting the others
    receiver.rule = lambda hit: Reply() if hit.seq == 0 else Reply(delay=0.3)
    services.create_subscription(widget=widget, url=receiver.url(), events=["message.created"])
    emit_messages(widget, 12, bulk=True)
    start, lock, counted = engine.send._start, threading.Lock(), {"now": 0, "most": 0, "first": True}

    def ended(_future):
        with lock:
            counted["now"] -= 1

    def start_and_count(row):
        attempt = start(row)
        with lock:
            counted["now"] += 1
            counted["most"] = max(counted["most"], counted["now"])
            first, counted["first"] = counted["first"], False
        attempt.call.add_done_callback(ended)
        if first:
            futures_wait([attempt.call], timeout=10)
        return attempt

    monkeypatch.setattr(engine.send, "_start", start_and_count)
    # when a run sends them
    assert services.deliver_due(concurrency=4) == 12
    # then the endpoint never had more attempts in flight than its share
    assert counted["most"] == 3
    assert Counter(Delivery.objects.values_list("status", flat=True)) == {"delivered": 12}


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_places_held_back_while_answers_wait_to_be_written_are_filled_once_they_are(
    widget, receiver, lost_triggers, monkeypatch
):
    # given a slow endpoint (3 s) with one delivery due first and a fast one with 12 due next, in a
    # run of 4 places: the fast one holds its share, 3 places, its answers 0-0.1 s apart; and a first
    # write of answers that takes 0.5 s, while more than 4 answers come in and wait to be written,
    # so the outbound thread stops refilling (the bound on unwritten attempts) and the places empty
    receiver.rule = lambda hit: Reply(delay=3.0) if hit.path == "/slow" else Reply(delay=0.05 * (hit.seq % 3))
    services.create_subscription(widget=widget, url=receiver.url("/fast"), events=["message.created"])
    emit_messages(widget, 11, bulk=True)
    services.create_subscription(widget=widget, url=receiver.url("/slow"), events=["message.created"])
    emit_messages(widget, 1, bulk=True)
    Delivery.objects.filter(subscription__url__endswith="/fast").update(
        next_attempt_at=timezone.now() + timedelta(milliseconds=1)
    )
    time.sleep(0.01)
    record, writes = engine.record._record, []

    def slow_first_write(outcomes):
        writes.append(len(outcomes))
        if len(writes) == 1:
            time.sleep(0.5)
        return record(outcomes)

    monkeypatch.setattr(engine.record, "_record", slow_first_write)
    # when the run sends them
    assert services.deliver_due(concurrency=4) == 13
    # then the fast endpoint got every delivery before the slow one answered: once the held-back
    # answers were written, the empty places were filled again, not left empty until the slow answer
    hits = receiver.snapshot()
    slow = [hit.at for hit in hits if hit.path == "/slow"]
    fast = [hit.at for hit in hits if hit.path == "/fast"]
    assert len(slow) == 1 and len(fast) == 12
    assert max(fast) < min(slow) + 3.0
    assert Counter(Delivery.objects.values_list("status", flat=True)) == {"delivered": 13}


# --- a slow endpoint beside fast ones -------------------------------------------------------------------


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_slow_endpoint_does_not_stall_the_others(widget, receiver, lost_triggers):
    # given an endpoint answering after 3 s with 60 deliveries due first, and a fast one with 20 due next
    receiver.rule = lambda hit: Reply(delay=3.0) if hit.path == "/slow" else Reply()
    services.create_subscription(widget=widget, url=receiver.url("/slow"), events=["message.created"])
    emit_messages(widget, 40, bulk=True)
    services.create_subscription(widget=widget, url=receiver.url("/fast"), events=["message.created"])
    fast_keys = emit_messages(widget, 20, bulk=True)  # (the slow endpoint gets these 20 too)
    Delivery.objects.filter(subscription__url__endswith="/fast").update(
        next_attempt_at=timezone.now() + timedelta(milliseconds=1)
    )
    time.sleep(0.01)
    # when one engine run with 8 threads sends them
    with ThreadPoolExecutor(1) as runner:
        run = runner.submit(services.deliver_due, concurrency=8, max_seconds=5)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            hits = receiver.snapshot()
            if sum(1 for hit in hits if hit.path == "/fast") >= 20:
                break
            time.sleep(0.01)
        run.result(timeout=60)
    # then the fast endpoint got all its deliveries before the slow one answered even once, and
    # the slow one never held more than three quarters of the threads
    slow = [hit for hit in hits if hit.path == "/slow"]
    fast = [hit for hit in hits if hit.path == "/fast"]
    assert sorted(hit.key for hit in fast) == sorted(fast_keys)
    assert slow and max(hit.at for hit in fast) < min(hit.at for hit in slow) + 3.0
    first_wave = [hit for hit in receiver.snapshot() if hit.path == "/slow" and hit.at < slow[0].at + 1.0]
    assert len(first_wave) == 6
    assert Delivery.objects.filter(subscription__url__endswith="/fast", status="delivered").count() == 20


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_run_keeps_webhook_concurrency_places_and_one_endpoint_three_quarters_of_them(
    widget, receiver, lost_triggers, settings
):
    # given WEBHOOK_CONCURRENCY 8 and 20 deliveries due to an endpoint answering after 1 s
    settings.WEBHOOK_CONCURRENCY = 8
    receiver.rule = always(200, delay=1.0)
    services.create_subscription(widget=widget, url=receiver.url(), events=["message.created"])
    emit_messages(widget, 20, bulk=True)
    # when a run with the default places may start attempts for half a second
    done = services.deliver_due(max_seconds=0.5)
    # then the endpoint held 6 of the 8 places, and the rows not started went back to the queue
    assert done == len(receiver.snapshot()) == Attempt.objects.count() == 6
    assert Delivery.objects.filter(status="pending", next_attempt_at__lte=timezone.now()).count() == 14


@pytest.mark.parametrize("value", ["1", "101"])
def test_webhook_concurrency_out_of_range_stops_start_up(value):
    env = {**os.environ, "WEBHOOK_CONCURRENCY": value, "DJANGO_SETTINGS_MODULE": "config.settings"}
    done = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode != 0 and f"WEBHOOK_CONCURRENCY must be from 2 to 100, not {value}" in done.stderr
