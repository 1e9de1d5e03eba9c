"""Retention of the delivery log and the outbox (apps.webhooks.retention): a settled delivery
unchanged for WEBHOOK_DELIVERY_RETENTION_DAYS is deleted with its attempts, a pending one never is;
an outbox event goes once it is dispatched, older than the window, and no delivery refers to it.
The nightly job covers every widget alike."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
import time
import uuid
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from apps.core.models import OutboxEvent
from apps.webhooks import retention
from apps.webhooks.models import SETTLED, Attempt, Delivery, Endpoint, Subscription
from config.celery import BEAT_SCHEDULE, app
from tests.support.concurrency import direct_connection, race
from tests.support.plugin import assert_problem

pytestmark = pytest.mark.django_db

DAYS = 30
BASE = "/api/v1/webhook-subscriptions"
_keys = iter(range(10**6))


def idem() -> dict:
    return {"HTTP_X_SERVICE_IDEMPOTENCY_KEY": f"ret-{next(_keys)}"}


@pytest.fixture(autouse=True)
def window(settings):
    settings.WEBHOOK_DELIVERY_RETENTION_DAYS = DAYS


def ago(days: float):
    return timezone.now() - timedelta(days=days)


def subscription(widget, url: str = "https://hooks.example.com/r") -> Subscription:
    return Subscription.objects.create(widget=widget, url=url, events=["message.created"])


def event(widget, *, created: float, dispatched: float | None) -> OutboxEvent:
    """An outbox event created `created` days ago and dispatched `dispatched` days ago (None: not yet)."""
    return OutboxEvent.objects.create(
        widget=widget,
        type="message.created",
        data={},
        created_at=ago(created),
        dispatched_at=None if dispatched is None else ago(dispatched),
    )


def delivery(sub: Subscription, *, status: str, changed: float, created: float | None = None, **fields) -> Delivery:
    """A delivery of a new event, last changed `changed` days ago, with one attempt."""
    created = changed if created is None else created
    if "event" not in fields:
        fields["event"] = event(sub.widget, created=created, dispatched=created)
    row = Delivery.objects.create(
        widget=sub.widget,
        subscription=sub,
        event_type="message.created",
        status=status,
        body="{}",
        created_at=ago(created),
        updated_at=ago(changed),
        **fields,
    )
    Attempt.objects.create(delivery=row, number=1)
    return row


def exists(row) -> bool:
    return type(row).objects.filter(pk=row.pk).exists()


# --- deliveries ------------------------------------------------------------------------------------


@pytest.mark.parametrize("status", ["delivered", "failed", "skipped"])
def test_a_settled_delivery_past_the_window_goes_with_its_attempts(widget, status):
    row = delivery(subscription(widget), status=status, changed=DAYS + 1)

    counts = retention.purge_delivery_log()

    assert not exists(row) and not Attempt.objects.filter(delivery_id=row.pk).exists()
    assert counts["deliveries"] == 1


def test_a_pending_delivery_is_never_deleted_by_age(widget):
    row = delivery(subscription(widget), status="pending", changed=DAYS * 10)

    retention.purge_delivery_log()

    assert exists(row) and Attempt.objects.filter(delivery_id=row.pk).exists() and exists(row.event)


def test_a_settled_delivery_changed_within_the_window_stays_however_old_it_is(widget):
    sub = subscription(widget)
    recent = delivery(sub, status="failed", changed=DAYS - 1, created=DAYS * 3)
    edge = delivery(sub, status="delivered", changed=DAYS - 0.01)

    retention.purge_delivery_log()

    assert exists(recent) and exists(edge)


def test_the_window_is_the_setting(widget, settings):
    sub = subscription(widget)
    week_old = delivery(sub, status="delivered", changed=8)
    settings.WEBHOOK_DELIVERY_RETENTION_DAYS = 10
    retention.purge_delivery_log()
    assert exists(week_old)

    settings.WEBHOOK_DELIVERY_RETENTION_DAYS = 7
    retention.purge_delivery_log()
    assert not exists(week_old)


def test_settled_means_every_status_but_pending():
    assert set(SETTLED.children[0][1]) == set(Delivery.Status) - {Delivery.Status.PENDING}


def test_a_redelivered_row_stays_while_its_copy_is_kept(widget):
    sub = subscription(widget)
    original = delivery(sub, status="failed", changed=DAYS + 5)
    copy = delivery(sub, status="pending", changed=1, event=original.event, redelivery_of=original)

    retention.purge_delivery_log()

    assert exists(original) and exists(copy)
    assert Delivery.objects.get(pk=copy.pk).redelivery_of_id == original.pk


def test_an_expired_row_and_its_expired_copies_go_in_one_run(widget):
    """Two copies of one row: nulling their `redelivery_of` first would make both the event's
    automatic delivery, which the table refuses; the copies go first, then the original."""
    sub = subscription(widget)
    original = delivery(sub, status="failed", changed=DAYS + 9)
    first = delivery(sub, status="failed", changed=DAYS + 8, event=original.event, redelivery_of=original)
    second = delivery(sub, status="delivered", changed=DAYS + 7, event=original.event, redelivery_of=original)
    again = delivery(sub, status="delivered", changed=DAYS + 6, event=original.event, redelivery_of=second)

    counts = retention.purge_delivery_log(batch_size=1)

    assert not Delivery.objects.filter(pk__in=[original.pk, first.pk, second.pk, again.pk]).exists()
    assert counts == {"deliveries": 4, "outbox_events": 1}


def test_an_endpoints_calls_follow_the_same_rule(widget):
    endpoint = Endpoint.objects.create(widget=widget, owner="external_operator", owner_id=1, url="https://op.example")
    settled, pending = (
        Delivery.objects.create(
            widget=widget,
            endpoint=endpoint,
            key=uuid.uuid4(),
            event_type="message.created",
            status=status,
            body="{}",
            created_at=ago(DAYS + 1),
            updated_at=ago(DAYS + 1),
        )
        for status in ("failed", "pending")
    )

    retention.purge_delivery_log()

    assert not exists(settled) and exists(pending) and exists(endpoint)


# --- outbox events ------------------------------------------------------------------------------------


def test_a_dispatched_event_past_the_window_with_no_delivery_goes(widget):
    lone = event(widget, created=DAYS + 1, dispatched=DAYS + 1)

    counts = retention.purge_delivery_log()

    assert not exists(lone) and counts["outbox_events"] == 1


def test_an_event_not_dispatched_stays_however_old(widget):
    waiting = event(widget, created=DAYS * 10, dispatched=None)

    retention.purge_delivery_log()

    assert exists(waiting)


def test_an_event_dispatched_within_the_window_stays(widget):
    late = event(widget, created=DAYS + 3, dispatched=DAYS - 1)
    young = event(widget, created=1, dispatched=1)

    retention.purge_delivery_log()

    assert exists(late) and exists(young)


def test_an_event_a_kept_delivery_refers_to_stays(widget):
    sub = subscription(widget)
    kept_pending = delivery(sub, status="pending", changed=DAYS + 2)
    kept_recent = delivery(sub, status="delivered", changed=1, created=DAYS + 2)
    for row in (kept_pending, kept_recent):
        OutboxEvent.objects.filter(pk=row.event_id).update(created_at=ago(DAYS + 2), dispatched_at=ago(DAYS + 2))

    retention.purge_delivery_log()

    assert exists(kept_pending.event) and exists(kept_recent.event)


def test_an_event_whose_deliveries_expire_goes_in_the_same_run(widget):
    old = delivery(subscription(widget), status="delivered", changed=DAYS + 1)

    assert retention.purge_delivery_log() == {"deliveries": 1, "outbox_events": 1}
    assert not exists(old.event)


# --- the job ------------------------------------------------------------------------------------------


def test_every_widget_follows_the_same_rule(widget, other_widget):
    mine, theirs = subscription(widget), subscription(other_widget)
    gone = [delivery(mine, status="delivered", changed=DAYS + 1), delivery(theirs, status="failed", changed=DAYS + 1)]
    kept = [delivery(mine, status="pending", changed=DAYS + 1), delivery(theirs, status="delivered", changed=1)]
    their_event = event(other_widget, created=DAYS + 1, dispatched=DAYS + 1)

    retention.purge_delivery_log()

    assert not any(exists(row) for row in gone) and all(exists(row) for row in kept)
    assert not exists(their_event)


def test_rows_are_deleted_in_batches(widget):
    sub = subscription(widget)
    rows = [delivery(sub, status="delivered", changed=DAYS + 1) for _ in range(5)]
    kept = delivery(sub, status="delivered", changed=1)

    with CaptureQueriesContext(connection) as ctx:
        counts = retention.purge_delivery_log(batch_size=2)

    deletes = [q["sql"] for q in ctx.captured_queries if q["sql"].startswith('DELETE FROM "webhooks_delivery"')]
    outbox = [q["sql"] for q in ctx.captured_queries if q["sql"].startswith('DELETE FROM "core_outboxevent"')]
    assert len(deletes) == 3 and len(outbox) == 3  # 2 + 2 + 1 each
    assert counts == {"deliveries": 5, "outbox_events": 5}
    assert not Delivery.objects.filter(pk__in=[row.pk for row in rows]).exists() and exists(kept)


def test_a_second_run_deletes_nothing_more(widget):
    sub = subscription(widget)
    delivery(sub, status="delivered", changed=DAYS + 1)
    kept = delivery(sub, status="pending", changed=DAYS + 1)

    assert retention.purge_delivery_log() == {"deliveries": 1, "outbox_events": 1}
    assert retention.purge_delivery_log() == {"deliveries": 0, "outbox_events": 0}
    assert exists(kept) and Delivery.objects.count() == 1


def test_the_job_logs_counts_only(widget, caplog):
    delivery(subscription(widget), status="delivered", changed=DAYS + 1)

    with caplog.at_level(logging.INFO, logger="apps.webhooks.retention"):
        retention.purge_delivery_log()

    (record,) = [r for r in caplog.records if r.name == "apps.webhooks.retention"]
    assert record.getMessage() == "retention: webhook delivery log purged"
    assert (record.deliveries, record.outbox_events) == (1, 1)


def test_the_nightly_job_is_scheduled_on_the_bulk_queue():
    assert BEAT_SCHEDULE["webhooks.purge_delivery_log"] == ("apps.webhooks.tasks.purge_delivery_log", 86400)
    app.loader.import_default_modules()
    assert "apps.webhooks.tasks.purge_delivery_log" in app.tasks
    assert app.amqp.router.route({}, "apps.webhooks.tasks.purge_delivery_log")["queue"].name == "bulk"


def test_the_task_runs_the_job(widget):
    from apps.webhooks.tasks import purge_delivery_log

    row = delivery(subscription(widget), status="failed", changed=DAYS + 1)

    assert purge_delivery_log() == {"deliveries": 1, "outbox_events": 1}
    assert not exists(row)


@pytest.mark.parametrize("value", ["0", "-3"])
def test_a_window_below_one_day_stops_start_up(value):
    env = {**os.environ, "WEBHOOK_DELIVERY_RETENTION_DAYS": value, "DJANGO_SETTINGS_MODULE": "config.settings"}
    done = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode != 0 and "WEBHOOK_DELIVERY_RETENTION_DAYS must be at least 1" in done.stderr


# --- redelivery of a purged row ----------------------------------------------------------------------


def test_redelivering_a_purged_delivery_answers_as_an_unknown_one(api, widget):
    client = api(scopes=["webhooks:write", "webhooks:read"])
    sub = subscription(widget)
    purged = delivery(sub, status="failed", changed=DAYS + 1)
    retention.purge_delivery_log()

    def redeliver(delivery_id) -> dict:
        response = client.post(f"{BASE}/{sub.pk}/redeliver", {"delivery_id": str(delivery_id)}, format="json", **idem())
        body = assert_problem(response, 422, "validation_failed")
        return {k: v for k, v in body.items() if k != "instance"}

    assert redeliver(purged.delivery_id) == redeliver(uuid.uuid4())
    assert not Delivery.objects.exists()


def wait_for_a_lock_wait(watcher, thread: threading.Thread) -> None:
    """Until a session of this database waits on a lock, or `thread` has ended (at most 10 s)."""
    for _ in range(200):
        waiting = watcher.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()"
        ).fetchone()[0]
        if waiting or not thread.is_alive():
            return
        time.sleep(0.05)


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_two_jobs_at_once_delete_each_row_once(widget, other_widget):
    subs = [subscription(widget), subscription(other_widget)]
    for sub in subs:
        for _ in range(6):
            delivery(sub, status="delivered", changed=DAYS + 1)
    kept = delivery(subs[0], status="pending", changed=DAYS + 1)

    results = race([lambda: retention.purge_delivery_log(batch_size=2)] * 2)

    assert not [r for r in results if isinstance(r, Exception)], results
    assert sum(r["deliveries"] for r in results) == 12 and sum(r["outbox_events"] for r in results) == 12
    assert list(Delivery.objects.values_list("pk", flat=True)) == [kept.pk] and exists(kept.event)


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_redelivering_a_row_while_the_job_deletes_it_answers_as_an_unknown_one(api, widget):
    """The job's batch holds the row deleted but not committed (as its transaction does) when the
    redelivery comes: the redelivery waits for it and finds no row, never a broken reference."""
    client = api(scopes=["webhooks:write"])
    sub = subscription(widget)
    doomed = delivery(sub, status="failed", changed=DAYS + 1)
    answers: list = []
    with direct_connection() as job, direct_connection() as watcher:
        job.execute("BEGIN")
        job.execute("DELETE FROM webhooks_attempt WHERE delivery_id = %s", [doomed.pk])
        job.execute("DELETE FROM webhooks_delivery WHERE id = %s", [doomed.pk])

        def redeliver():
            try:
                answers.append(
                    client.post(
                        f"{BASE}/{sub.pk}/redeliver", {"delivery_id": str(doomed.delivery_id)}, format="json", **idem()
                    )
                )
            finally:
                connection.close()

        thread = threading.Thread(target=redeliver)
        thread.start()
        wait_for_a_lock_wait(watcher, thread)  # the redelivery waits on the row's lock (or has answered)
        job.execute("COMMIT")
        thread.join(timeout=30)

    (response,) = answers
    body = assert_problem(response, 422, "validation_failed")
    assert body["errors"] == {"delivery_id": ["No such delivery of this subscription."]}
    assert not Delivery.objects.exists()


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_redelivery_committed_under_the_jobs_batch_keeps_the_row_and_the_job_goes_on(widget, other_widget):
    """A redelivery holds the row locked and commits its copy while the job's batch waits to delete
    it: the batch rolls back, the row stays for its copy, and the other widgets are purged."""
    sub = subscription(widget)
    original = delivery(sub, status="failed", changed=DAYS + 1)
    theirs = delivery(subscription(other_widget), status="failed", changed=DAYS + 1)
    results: list = []
    with direct_connection() as redelivery, direct_connection() as watcher:
        redelivery.execute("BEGIN")
        redelivery.execute("SELECT 1 FROM webhooks_delivery WHERE id = %s FOR UPDATE", [original.pk])
        thread = threading.Thread(target=lambda: results.extend(race([retention.purge_delivery_log])))
        thread.start()
        wait_for_a_lock_wait(watcher, thread)  # the job's delete waits on the row's lock
        redelivery.execute(
            "INSERT INTO webhooks_delivery (widget_id, subscription_id, event_id, delivery_id, event_type, envelope,"
            " status, body, payload, attempts, last_error, redelivery_of_id, created_at, updated_at)"
            " SELECT widget_id, subscription_id, event_id, gen_random_uuid(), event_type, envelope, 'pending', body,"
            " payload, 0, '', id, now(), now() FROM webhooks_delivery WHERE id = %s",
            [original.pk],
        )
        redelivery.execute("COMMIT")
        thread.join(timeout=60)

    (counts,) = results
    assert not isinstance(counts, Exception), counts
    assert counts["batches_deferred"] == 1 and counts["deliveries"] == 1
    assert exists(original) and not exists(theirs)
    assert Delivery.objects.get(redelivery_of=original).status == "pending"
