"""The SLA breach timer: the beat job `apps.routing.tasks.sla_breaches` breaches each due clock once,
reads only due clocks (its statements do not grow with the open, not-due ones), and `sla.breached`
reaches the webhook subscriptions."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.chats.tests.factories import ChatFactory
from apps.core import events
from apps.core.models import OutboxEvent
from apps.routing import sla, tasks
from apps.routing.models import SlaClock
from apps.webhooks.models import Delivery, Subscription
from tests.support.factories import AgentFactory

from .sla_support import T0, breaches, make_policy

pytestmark = pytest.mark.django_db


def open_clocks(widget, chat, policy, n: int, *, due: timedelta, kind: str = "first_response") -> None:
    SlaClock.objects.bulk_create(
        SlaClock(
            widget=widget,
            chat=chat,
            policy_id=policy.pk,
            kind=kind,
            started_at=T0,
            due_at=T0 + due + timedelta(seconds=i),
        )
        for i in range(n)
    )


def test_the_beat_task_breaches_due_clocks_once(widget, captured_events, time_machine):
    policy = make_policy(widget)
    agent = AgentFactory(widget=widget)
    chat = ChatFactory(widget=widget, agent=agent)
    open_clocks(widget, chat, policy, 3, due=timedelta(seconds=0))
    open_clocks(widget, chat, policy, 2, due=timedelta(hours=1), kind="resolution")
    time_machine.move_to(T0 + timedelta(seconds=10), tick=False)
    assert tasks.sla_breaches() == 3
    assert tasks.sla_breaches() == 0
    rows = SlaClock.objects.filter(breached_at__isnull=False)
    assert rows.count() == 3 and {(r.met, r.agent_id, r.stopped_at) for r in rows} == {(False, agent.pk, None)}
    assert (
        breaches(captured_events)
        == [{"chat_id": chat.pk, "policy_id": policy.pk, "kind": "first_response", "button_guid": widget.button_guid}]
        * 3
    )
    assert SlaClock.objects.filter(kind="resolution", breached_at__isnull=True).count() == 2


def test_the_countdown_task_breaches_only_its_clock_and_only_when_due(widget, captured_events, time_machine):
    policy = make_policy(widget)
    chat = ChatFactory(widget=widget)
    open_clocks(widget, chat, policy, 2, due=timedelta(seconds=60))
    first, second = SlaClock.objects.order_by("id")
    time_machine.move_to(T0 + timedelta(seconds=30), tick=False)
    assert tasks.sla_clock_due(first.pk) == 0
    time_machine.move_to(T0 + timedelta(seconds=120), tick=False)
    assert tasks.sla_clock_due(first.pk) == 1
    assert tasks.sla_clock_due(first.pk) == 0
    assert SlaClock.objects.get(pk=second.pk).breached_at is None
    assert len(breaches(captured_events)) == 1


def test_a_stopped_clock_is_never_breached(widget, captured_events):
    policy = make_policy(widget)
    chat = ChatFactory(widget=widget)
    open_clocks(widget, chat, policy, 1, due=timedelta(seconds=0))
    SlaClock.objects.update(stopped_at=T0, met=True)
    assert sla.breach_due(now=T0 + timedelta(days=1)) == 0
    assert breaches(captured_events) == []


def test_batches_cover_every_due_clock(widget, captured_events):
    policy = make_policy(widget)
    chat = ChatFactory(widget=widget)
    open_clocks(widget, chat, policy, 7, due=timedelta(seconds=0))
    assert sla.breach_due(now=T0 + timedelta(seconds=60), batch=3) == 7
    assert len(breaches(captured_events)) == 7


def _statements(widget, policy, chat, *, open_not_due: int) -> int:
    SlaClock.objects.all().delete()
    open_clocks(widget, chat, policy, 1, due=timedelta(seconds=0))
    open_clocks(widget, chat, policy, open_not_due, due=timedelta(days=1), kind="resolution")
    with CaptureQueriesContext(connection) as queries:
        assert sla.breach_due(now=T0 + timedelta(seconds=5)) == 1
    return len(queries)


def test_the_jobs_statements_do_not_grow_with_open_clocks_that_are_not_due(widget):
    policy = make_policy(widget)
    chat = ChatFactory(widget=widget)
    _statements(widget, policy, chat, open_not_due=1)  # the cached reads (the report time zone) warm
    one = _statements(widget, policy, chat, open_not_due=1)
    many = _statements(widget, policy, chat, open_not_due=200)
    assert many == one


def test_the_jobs_statements_follow_the_breaches_due(widget, django_assert_max_num_queries):
    """A bounded number of statements per breach (its UPDATE and its event), a few per run."""
    policy = make_policy(widget)
    chat = ChatFactory(widget=widget)
    open_clocks(widget, chat, policy, 1, due=timedelta(seconds=0))
    with CaptureQueriesContext(connection) as single:
        sla.breach_due(now=T0 + timedelta(seconds=60))
    SlaClock.objects.all().delete()
    open_clocks(widget, chat, policy, 20, due=timedelta(seconds=0))
    per_breach = len(single)
    with django_assert_max_num_queries(per_breach * 20):
        assert sla.breach_due(now=T0 + timedelta(seconds=60)) == 20


def test_the_due_read_uses_the_partial_index_condition(widget):
    """The job's read carries the partial index's predicate (stopped and breached null) and the due
    bound, so the database can answer it from `sla_clock_running` alone."""
    with CaptureQueriesContext(connection) as queries:
        sla.breach_due(now=T0)
    select = next(q["sql"] for q in queries if q["sql"].lstrip().upper().startswith("SELECT"))
    assert '"stopped_at" IS NULL' in select and '"breached_at" IS NULL' in select and '"due_at" <=' in select


@pytest.fixture
def public_dns(monkeypatch):
    import ipaddress

    from apps.platform import outbound

    monkeypatch.setattr(outbound.policy, "resolve_host", lambda host, port: [ipaddress.ip_address("93.184.216.34")])


def test_a_breach_is_delivered_to_the_webhook_subscriptions(widget, public_dns):
    subscription = Subscription.objects.create(
        widget=widget, url="https://hooks.example.com/sla", events=["sla.breached"]
    )
    Subscription.objects.create(widget=widget, url="https://hooks.example.com/other", events=["message.created"])
    policy = make_policy(widget)
    chat = ChatFactory(widget=widget)
    open_clocks(widget, chat, policy, 1, due=timedelta(seconds=0))
    sla.breach_due(now=T0 + timedelta(seconds=1))
    event = OutboxEvent.objects.get(type="sla.breached")
    events.fan_out(event.pk)
    delivery = Delivery.objects.get(event=event)
    assert delivery.subscription_id == subscription.pk and delivery.status == "pending"
    assert event.data == {
        "chat_id": chat.pk,
        "policy_id": policy.pk,
        "kind": "first_response",
        "button_guid": widget.button_guid,
    }
