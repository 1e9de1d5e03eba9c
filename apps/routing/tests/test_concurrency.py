"""Assignment under real concurrency on PostgreSQL: visitors arriving and operators freeing slots
at once, each on its own connection, with the on-commit serving the application runs."""

from __future__ import annotations

import pytest

from apps.chats import services as chat_services
from apps.chats.models import Chat
from apps.core.models import OutboxEvent
from apps.routing.models import ChatRouting
from tests.support.concurrency import race

from .helpers import open_loads, operators, presence, queued_ids, routing_on, visitor_writes

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

CAPACITY = 3


def test_fifty_visitors_and_ten_operators_freeing_slots(widget, monkeypatch):
    online = presence(monkeypatch)
    routing_on(widget, mode="least_busy", capacity=CAPACITY)
    team = operators(widget, 10, online)

    # 50 visitors write at once: 30 slots are filled, 20 wait; no chat is assigned twice.
    results = race([lambda n=n: visitor_writes(widget, f"visitor {n}").pk for n in range(50)])
    assert all(isinstance(r, int) for r in results), results
    loads = open_loads(widget)
    assert loads == {agent.pk: CAPACITY for agent in team}
    waiting = queued_ids(widget)
    assert len(waiting) == 20
    assigned = [
        e.data["chat_id"] for e in OutboxEvent.objects.filter(type="chat.assigned") if e.data["agent_id"] is not None
    ]
    assert len(assigned) == len(set(assigned)) == 30

    # Every operator frees a slot at once: the ten chats at the queue's head are served, in order.
    owned = {
        agent.pk: Chat.objects.filter(widget=widget, agent=agent, status=Chat.Status.ACTIVE).first() for agent in team
    }
    results = race([lambda c=c: chat_services.close_chat(widget=widget, chat=c).pk for c in owned.values()])
    assert all(isinstance(r, int) for r in results), results
    assert open_loads(widget) == {agent.pk: CAPACITY for agent in team}
    assert queued_ids(widget) == waiting[10:]
    served = set(Chat.objects.filter(pk__in=waiting[:10], agent__isnull=False).values_list("pk", flat=True))
    assert served == set(waiting[:10])
    assert ChatRouting.objects.filter(chat_id__in=waiting[:10], assigned_by="routing").count() == 10
