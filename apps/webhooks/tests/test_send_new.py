"""Fan-out attempts its own new rows once its transaction commits (`delivery.send_new`): no Celery
trigger, no deliver_due task, no lease by due date and no load between the commit and the first
attempt; the engine's guarantees hold (one attempt in flight per row, leases, retries, the sweeper
for what the fan-out's process did not take).

These tests commit (transaction=True): the hand-over runs on commit.
"""

from __future__ import annotations

import gc
from collections import Counter
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from apps.core import events as core_events
from apps.core.models import Widget
from apps.webhooks import delivery as engine
from apps.webhooks import services, tasks
from apps.webhooks.models import Attempt, Delivery
from apps.webhooks.tests.receiver import Receiver

pytestmark = pytest.mark.django_db(transaction=True)

CLIENT_GUID = "e" * 32


@pytest.fixture
def receiver(monkeypatch: pytest.MonkeyPatch, settings):
    settings.OUTBOUND_ALLOW_LOOPBACK = True
    with Receiver() as rx:
        monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(rx.ca_path))
        yield rx
    gc.collect()  # the pool threads' connections, before the test database is flushed


@pytest.fixture(autouse=True)
def triggers(monkeypatch: pytest.MonkeyPatch) -> list[float | None]:
    """Celery triggers of the engine, recorded instead of sent (none is needed on the new path)."""
    asked: list[float | None] = []
    monkeypatch.setattr(engine.sweep, "trigger", lambda countdown=None: asked.append(countdown))
    return asked


@pytest.fixture(autouse=True)
def _inline_pool_on_sqlite(monkeypatch: pytest.MonkeyPatch) -> None:
    """SQLite's in-memory test database fails across threads: there the hand-over runs inline."""
    if connection.vendor == "sqlite":
        send_new = engine.send_new
        monkeypatch.setattr(engine, "send_new", lambda rows, **kw: send_new(rows, **{**kw, "concurrency": 1}))


def emit_messages(widget: Widget, count: int) -> list[str]:
    """`count` message.created events committed in one transaction, handed off on commit (eager)."""
    with transaction.atomic():
        emitted = [
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
    return [str(event.pk) for event in emitted]


def test_a_committed_event_is_attempted_by_the_fan_out_without_a_trigger(widget, receiver, triggers):
    # given a subscription
    secret = services.create_subscription(widget=widget, url=receiver.url(), events=["message.created"])[1]
    # when one event commits (its hand-off runs fan-out on commit, eager)
    [key] = emit_messages(widget, 1)
    # then it reached the endpoint already, signed, and its attempt is logged; nothing was triggered
    [hit] = receiver.snapshot()
    assert hit.key == key
    assert services.standard_signature(secret, key, int(hit.header("webhook-timestamp")), hit.body) in hit.header(
        "webhook-signature"
    )
    row = Delivery.objects.get()
    assert (row.status, row.attempts, row.next_attempt_at, row.last_status_code) == ("delivered", 1, None, 200)
    assert hit.delivery == str(row.delivery_id)
    assert list(Attempt.objects.values_list("delivery_id", "number", "status_code")) == [(row.pk, 1, 200)]
    assert triggers == []


def test_several_new_rows_go_out_on_the_pool_once_each(widget, receiver, triggers):
    services.create_subscription(widget=widget, url=receiver.url("/a"), events=["message.created"])
    services.create_subscription(widget=widget, url=receiver.url("/b"), events=["message.created"])
    keys = emit_messages(widget, 10)
    hits = receiver.wait_for(20)
    assert Counter((hit.path, hit.key) for hit in hits) == {(path, key): 1 for path in ("/a", "/b") for key in keys}
    assert Counter(Delivery.objects.values_list("status", flat=True)) == {"delivered": 20}
    assert Attempt.objects.count() == 20
    assert triggers == []


def test_a_failed_first_attempt_is_retried_by_the_engine_as_usual(widget, receiver, triggers):
    receiver.rule = lambda hit: 503 if hit.key_attempt == 1 else 200
    services.create_subscription(widget=widget, url=receiver.url(), events=["message.created"])
    [key] = emit_messages(widget, 1)
    row = Delivery.objects.get()
    assert (row.status, row.attempts, row.last_error) == ("pending", 1, "http_503")
    assert row.next_attempt_at > timezone.now() + timedelta(seconds=5)  # the 10 s back-off
    assert triggers == [10]  # the retry's trigger, as after any failed attempt
    Delivery.objects.update(next_attempt_at=timezone.now())
    assert services.deliver_due(concurrency=1) == 1
    assert [hit.key for hit in receiver.snapshot()] == [key, key]
    assert Delivery.objects.get().status == "delivered"


def test_rows_beyond_the_share_of_one_fan_out_are_left_to_the_engine(widget, receiver, triggers, monkeypatch):
    # given a fan-out's process that takes at most 3 of its new rows
    monkeypatch.setattr(engine.first_attempts, "NEW_AT_ONCE", 3)
    services.create_subscription(widget=widget, url=receiver.url(), events=["message.created"])
    keys = emit_messages(widget, 5)
    # then it sent 3 and asked the engine for the others, which are due
    assert len(receiver.wait_for(3)) == 3
    assert triggers == [None]
    assert Counter(Delivery.objects.values_list("status", flat=True)) == {"delivered": 3, "pending": 2}
    assert not Delivery.objects.filter(status="pending", next_attempt_at__gt=timezone.now()).exists()
    assert services.deliver_due(concurrency=1) == 2
    assert sorted(hit.key for hit in receiver.snapshot()) == sorted(keys)


def test_a_row_leased_by_another_engine_meanwhile_is_not_sent_twice(widget, receiver, monkeypatch):
    # given another engine that leases the rows between the fan-out's commit and its hand-over
    services.create_subscription(widget=widget, url=receiver.url(), events=["message.created"])
    send_new, leased_elsewhere = engine.send_new, []

    def another_engine_first(rows, **options):
        leased_elsewhere.extend(engine.lease._lease(64))
        return send_new(rows, **options)

    monkeypatch.setattr(engine, "send_new", another_engine_first)
    emit_messages(widget, 2)
    # then the fan-out sent nothing: the rows are the other engine's (leased, unsent)
    assert len(leased_elsewhere) == 2
    assert receiver.snapshot() == []
    assert Attempt.objects.count() == 0
    assert not Delivery.objects.filter(next_attempt_at__lte=timezone.now()).exists()


def test_a_subscription_deactivated_before_the_hand_over_gets_nothing(widget, receiver, monkeypatch):
    sub = services.create_subscription(widget=widget, url=receiver.url(), events=["message.created"])[0]
    send_new = engine.send_new

    def deactivated_first(rows, **options):
        type(sub).objects.filter(pk=sub.pk).update(is_active=False)
        return send_new(rows, **options)

    monkeypatch.setattr(engine, "send_new", deactivated_first)
    emit_messages(widget, 1)
    assert receiver.snapshot() == []
    # the engine drops the row the next time it runs (as for any row of a deactivated subscription)
    services.deliver_due(concurrency=1)
    assert receiver.snapshot() == []
    assert not Delivery.objects.exists()


def test_the_url_and_secret_are_read_when_the_rows_are_leased(widget, receiver, monkeypatch):
    sub, _ = services.create_subscription(widget=widget, url=receiver.url("/old"), events=["message.created"])
    send_new = engine.send_new

    def changed_first(rows, **options):
        type(sub).objects.filter(pk=sub.pk).update(url=receiver.url("/new"))
        return send_new(rows, **options)

    monkeypatch.setattr(engine, "send_new", changed_first)
    emit_messages(widget, 1)
    assert [hit.path for hit in receiver.snapshot()] == ["/new"]


def test_a_failure_of_the_hand_over_leaves_the_rows_to_the_sweeper(widget, receiver, triggers, monkeypatch):
    services.create_subscription(widget=widget, url=receiver.url(), events=["message.created"])

    def broken(rows):
        raise RuntimeError("database went away")

    monkeypatch.setattr(engine.first_attempts, "_lease_new", broken)
    [key] = emit_messages(widget, 1)
    assert receiver.snapshot() == []
    assert triggers == [None]  # the engine was asked to take over
    assert tasks.sweep_deliveries() is True  # (eager: the sweep's deliver_due runs here)
    assert [hit.key for hit in receiver.wait_for(1)] == [key]


@pytest.mark.postgres
def test_the_hand_over_costs_two_statements_to_lease_and_one_to_record(widget, receiver, monkeypatch):
    services.create_subscription(widget=widget, url=receiver.url(), events=["message.created"])
    emit_messages(widget, 1)  # warm: the pool's session, the secret cache
    # given a fan-out whose hand-over is held back (its rows as fan-out built them, committed)
    send_new, held = engine.send_new, []
    monkeypatch.setattr(engine, "send_new", lambda rows, **options: held.extend(rows))
    emit_messages(widget, 1)
    assert len(held) == 1 and Delivery.objects.filter(status="pending").count() == 1
    # when it is handed over: the lease locks the row (reading the subscription) and moves it, one
    # statement records
    with CaptureQueriesContext(connection) as queries:
        assert send_new(held) == 1
    statements = [query["sql"] for query in queries if query["sql"] not in ("BEGIN", "COMMIT")]
    assert len(statements) == 3, [sql[:80] for sql in statements]
    assert Counter(Delivery.objects.values_list("status", flat=True)) == {"delivered": 2}
