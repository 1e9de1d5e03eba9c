"""One `sla.breached` per clock under concurrency, with real threads on PostgreSQL: beat runs racing
each other (SKIP LOCKED), the countdown task racing the beat, and an answer racing the timer."""

from collections import Counter
from datetime import timedelta

import pytest

from apps.chats.tests.factories import ChatFactory
from apps.core.models import OutboxEvent
from apps.routing import sla
from apps.routing.models import SlaClock
from tests.support.concurrency import race

from .sla_support import T0, make_policy

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def due_clocks(widget, n: int) -> list[SlaClock]:
    policy = make_policy(widget)
    chats = [ChatFactory(widget=widget) for _ in range(n)]
    return SlaClock.objects.bulk_create(
        SlaClock(widget=widget, chat=chat, policy_id=policy.pk, kind=kind, started_at=T0, due_at=T0)
        for chat in chats
        for kind in ("first_response", "resolution")
    )


def emitted() -> Counter:
    return Counter((e.data["chat_id"], e.data["kind"]) for e in OutboxEvent.objects.filter(type="sla.breached"))


@pytest.mark.parametrize("batch", [200, 3])
def test_concurrent_beat_runs_breach_each_clock_once(widget, batch):
    clocks = due_clocks(widget, 30)
    now = T0 + timedelta(seconds=1)
    results = race([lambda: sla.breach_due(now=now, batch=batch) for _ in range(4)])
    assert all(isinstance(r, int) for r in results), results
    assert sum(results) == len(clocks)
    counts = emitted()
    assert len(counts) == len(clocks) and set(counts.values()) == {1}
    assert SlaClock.objects.filter(breached_at__isnull=True).count() == 0


def test_the_countdown_task_racing_the_beat_emits_once(widget):
    clocks = due_clocks(widget, 5)
    now = T0 + timedelta(seconds=1)
    workers = [lambda: sla.breach_due(now=now)] * 2
    workers += [lambda c=c: sla.breach_due(now=now, clock_id=c.pk) for c in clocks]
    results = race(workers)
    assert all(isinstance(r, int) for r in results), results
    assert sum(results) == len(clocks)
    assert set(emitted().values()) == {1} and len(emitted()) == len(clocks)


def test_an_answer_racing_the_timer_breaches_once(widget):
    from apps.chats.models import Chat

    clocks = due_clocks(widget, 10)
    now = T0 + timedelta(seconds=1)

    def stop_all():
        from django.db import transaction

        done = 0
        for chat in Chat.objects.filter(widget=widget):
            with transaction.atomic():
                done += sla.stop_clocks(widget=widget, chat=chat, kinds=("first_response",), now=now)
        return done

    results = race([stop_all, lambda: sla.breach_due(now=now), lambda: sla.breach_due(now=now, batch=2)])
    assert not any(isinstance(r, Exception) for r in results), results
    counts = emitted()
    assert len(counts) == len(clocks) and set(counts.values()) == {1}
    assert SlaClock.objects.filter(kind="first_response", stopped_at__isnull=True).count() == 0


def test_the_beat_read_goes_through_the_partial_index(widget):
    """With many open clocks not yet due, PostgreSQL answers the job's read from `sla_clock_running`
    (an index range of the due ones), not a scan of the open clocks."""
    from django.db import connection, transaction

    policy = make_policy(widget)
    chat = ChatFactory(widget=widget)
    SlaClock.objects.bulk_create(
        SlaClock(
            widget=widget,
            chat=chat,
            policy_id=policy.pk,
            kind="resolution",
            started_at=T0,
            due_at=T0 + timedelta(days=1, seconds=i),
        )
        for i in range(20000)
    )
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE routing_slaclock")
    with transaction.atomic():
        plan = sla.due_clocks(now=T0).values_list("pk", flat=True)[: sla.BREACH_BATCH].explain()
    assert "sla_clock_running" in plan, plan
