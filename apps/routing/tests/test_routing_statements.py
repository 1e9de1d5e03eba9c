"""One assignment decision (`services.serve` giving one queued chat to an operator) runs a bounded
number of statements, the same with 5 or 200 chats queued and operators online (bench/routing.py
times it)."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from apps.agents import selectors as agent_selectors
from apps.agents.models import Agent
from apps.chats.models import Chat
from apps.chats.tests.factories import ContactFactory
from apps.routing import services
from apps.routing.models import ChatRouting, RoutingSettings
from apps.stats import facts

pytestmark = pytest.mark.django_db

# Statements of one decision with its in-transaction handlers (the chat, its routing row, the
# operator's last assignment, chat.assigned's outbox row, the statistics): counted on PostgreSQL
# and the embedded default (22 on both with cold caches), with a little room.
MAX_STATEMENTS = 24


def seed(widget, monkeypatch, size: int) -> list[Chat]:
    """`size` operators online with free slots and `size` chats in the queue, with their facts."""
    agents = Agent.objects.bulk_create(
        Agent(widget=widget, name=f"Operator {n}", email=f"op{n}@routing.invalid", type=Agent.Type.HUMAN)
        for n in range(size)
    )
    online = {agent.pk for agent in agents}
    monkeypatch.setattr(agent_selectors, "PRESENCE_SOURCE", lambda w: set(online))
    RoutingSettings.objects.create(widget=widget, mode=RoutingSettings.Mode.ROUND_ROBIN, default_capacity=3)
    start = timezone.now() - timedelta(hours=1)
    chats = [Chat.objects.create(widget=widget, contact=ContactFactory(widget=widget)) for _ in range(size)]
    ChatRouting.objects.bulk_create(
        ChatRouting(
            chat=chat, widget=widget, queued_at=start + timedelta(seconds=n), queue_since=start + timedelta(seconds=n)
        )
        for n, chat in enumerate(chats)
    )
    facts.rebuild_widget_facts(widget_id=widget.pk)
    return chats


def decide(widget) -> int:
    """Statements of one decision; checks it assigned the queue's head."""
    with CaptureQueriesContext(connection) as queries:
        assert services.serve(widget, limit=1) == 1
    return len(queries.captured_queries)


@pytest.mark.parametrize("size", [5, 200])
def test_one_decision_runs_a_bounded_number_of_statements(widget, monkeypatch, django_assert_max_num_queries, size):
    chats = seed(widget, monkeypatch, size)
    with django_assert_max_num_queries(MAX_STATEMENTS):
        assert services.serve(widget, limit=1) == 1
    head = Chat.objects.get(pk=chats[0].pk)
    assert head.agent_id is not None
    assert ChatRouting.objects.filter(widget=widget, queue_since__isnull=False).count() == size - 1


def test_the_count_does_not_grow_with_the_queue_or_the_operators(widget, other_widget, monkeypatch):
    seed(widget, monkeypatch, 5)
    small = decide(widget)
    online_small = agent_selectors.PRESENCE_SOURCE
    seed(other_widget, monkeypatch, 200)
    online_large = agent_selectors.PRESENCE_SOURCE
    monkeypatch.setattr(
        agent_selectors, "PRESENCE_SOURCE", lambda w: online_small(w) if w.pk == widget.pk else online_large(w)
    )
    large = decide(other_widget)
    assert small == large, (small, large)


def test_the_pool_is_one_statement_whatever_the_operators_online(widget, other_widget, monkeypatch):
    # the operators online are one parameter: one statement text (compiled and prepared once)
    # serves 5 and 200 of them, and each finds exactly its widget's operators with a free slot
    from apps.routing import selectors

    seed(widget, monkeypatch, 5)
    online_small = agent_selectors.PRESENCE_SOURCE
    seed(other_widget, monkeypatch, 200)
    online_large = agent_selectors.PRESENCE_SOURCE
    texts = {
        selectors._POOL_AGENTS.sql(widget=w.pk, online=online(w), default_capacity=3)[0]
        for w, online in ((widget, online_small), (other_widget, online_large))
    }
    assert len(texts) == 1
    settings = RoutingSettings.objects.get(widget=other_widget)
    found = selectors.pool(other_widget, settings).candidates
    assert sorted(c.agent_id for c in found) == sorted(online_large(other_widget))
    assert {(c.load, c.capacity) for c in found} == {(0, 3)}
