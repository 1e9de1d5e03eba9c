"""Concurrent writers on PostgreSQL: many chats of one day update the same daily rows (widget and
agent) at once, in different orders. No deadlock, no lost increment: the facts equal the direct count."""

import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from apps.agents.models import Agent
from apps.chats import services
from apps.chats.models import Chat
from apps.chats.tests.factories import ContactFactory
from apps.stats import selectors
from apps.stats.windows import Window
from tests.support.factories import AgentFactory

from . import reference
from .test_facts import ALL

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

THREADS, ROUNDS = 8, 6


def test_concurrent_conversations_lose_nothing_and_never_deadlock(widget):
    people = [AgentFactory(widget=widget), AgentFactory(widget=widget)]
    bot = AgentFactory(widget=widget, type=Agent.Type.AI)
    contacts = [ContactFactory(widget=widget) for _ in range(THREADS)]
    errors: list[BaseException] = []
    barrier = threading.Barrier(THREADS)

    def converse(n: int) -> None:
        try:
            barrier.wait()
            contact = contacts[n]
            for i in range(ROUNDS):
                message = services.post_client_message(
                    widget=widget, contact=contact, data=services.MessageInput(body=f"{n}/{i}")
                )
                chat = Chat.objects.get(pk=message.chat_id)
                author = bot if (n + i) % 3 == 0 else people[(n + i) % 2]
                services.post_agent_message(
                    widget=widget, chat=chat, agent=author, data=services.MessageInput(body="ok")
                )
                services.transfer_chat(widget=widget, chat=chat, to_agent=people[(n + i + 1) % 2])
                services.rate_chat(widget=widget, chat=chat, value=1 + (n + i) % 5)
        except BaseException as err:  # noqa: BLE001 (reported by the main thread)
            errors.append(err)
        finally:
            connection.close()

    threads = [threading.Thread(target=converse, args=(n,)) for n in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []

    now = timezone.now()
    start, end = now - timedelta(days=1), now + timedelta(days=1)
    window = Window(start, end)
    assert selectors.get_widget_stats(widget=widget, window=window, metrics=ALL) == reference.widget_stats(
        widget, start, end
    )
    agents = list(selectors.agents_of(widget).order_by("id"))
    rows = selectors.agent_rows(widget=widget, window=window, agents=agents, metrics=selectors.AGENT_METRICS)
    assert {row["agent_id"]: row["metrics"] for row in rows} == reference.agent_stats(widget, start, end)
    assert selectors.get_widget_stats(widget=widget, window=window, metrics=["messages_total"]) == {
        "messages_total": 2 * THREADS * ROUNDS
    }
