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
from tests.support.concurrency import race
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


def _chats_on_two_report_shards(widget, operator) -> tuple[Chat, list[Chat]]:
    """Chats of `operator`: one alone on its report shard, and two sharing another one."""
    from apps.chats.tests.factories import ChatFactory
    from apps.stats.models import REPORT_SHARDS

    by_shard: dict[int, list[Chat]] = {}
    while len(by_shard) < 2 or max(len(chats) for chats in by_shard.values()) < 2:
        chat = ChatFactory(widget=widget, agent=operator)
        by_shard.setdefault(chat.pk % REPORT_SHARDS, []).append(chat)
    shared = next(chats for chats in by_shard.values() if len(chats) >= 2)
    alone = next(chats[0] for chats in by_shard.values() if chats is not shared)
    return alone, shared


def test_the_breach_timer_and_an_answer_never_wait_on_each_other_in_a_cycle(widget, monkeypatch):
    """A breach and an in-time answer each add to the report rows of their chat's shard and of the
    operator. The timer holds one clock's rows at a time: were it to keep the first clock's rows
    while taking the second's, an answer holding the second's shard and waiting for the
    operator's row would close a cycle (PostgreSQL's deadlock)."""
    from apps.routing import sla
    from apps.routing.models import SlaClock
    from apps.routing.tests.sla_support import T0, make_policy

    operator = AgentFactory(widget=widget)
    policy = make_policy(widget)
    alone, shared = _chats_on_two_report_shards(widget, operator)
    # The timer takes `alone` first, then `shared[0]`; the answer stops `shared[1]`'s clock in time.
    for chat, due in ((alone, T0), (shared[0], T0 + timedelta(seconds=1)), (shared[1], T0 + timedelta(hours=1))):
        SlaClock.objects.create(
            widget=widget, chat=chat, policy_id=policy.pk, kind="first_response", started_at=T0, due_at=due
        )
    now = T0 + timedelta(seconds=2)
    first_breached, answered = threading.Event(), threading.Event()
    breach = sla.breach

    def breach_then_let_the_answer_in(**kwargs):
        won = breach(**kwargs)
        if not first_breached.is_set():
            first_breached.set()
            answered.wait(timeout=2)  # the answer blocks on the operator's row meanwhile: no signal
        return won

    monkeypatch.setattr(sla, "breach", breach_then_let_the_answer_in)

    def answer():
        from django.db import transaction

        first_breached.wait(timeout=10)
        try:
            with transaction.atomic():
                return sla.stop_clocks(widget=widget, chat=shared[1], kinds=("first_response",), now=now)
        finally:
            answered.set()

    results = race([lambda: sla.breach_due(now=now), answer])
    assert results == [2, 1]
    rows = SlaClock.objects.order_by("due_at").values_list("met", "breached_at")
    assert list(rows) == [(False, now), (False, now), (True, None)]


def test_the_idle_sweep_and_a_close_never_wait_on_each_other_in_a_cycle(widget, monkeypatch):
    """The idle sweep closes one chat per transaction: holding the first chat's report rows (its
    shard's, its operator's) while it takes the second's, it would close a cycle with an operator
    closing a third chat of the second's shard, who waits for the operator's row."""
    from apps.chats.services import lifecycle
    from apps.stats import facts

    operator = AgentFactory(widget=widget)
    alone, shared = _chats_on_two_report_shards(widget, operator)
    now = timezone.now()
    # The sweep closes `alone`, then `shared[0]` (quiet longest first); the operator closes `shared[1]`.
    for chat, quiet in ((alone, 30), (shared[0], 20), (shared[1], 0)):
        Chat.objects.filter(pk=chat.pk).update(last_message_at=now - timedelta(minutes=quiet))
    facts.rebuild_widget_facts(widget_id=widget.pk)
    first_closed, closed = threading.Event(), threading.Event()
    expire = lifecycle._expire

    def expire_then_let_the_close_in(chat, **kwargs):
        expire(chat, **kwargs)
        if not first_closed.is_set():
            first_closed.set()
            closed.wait(timeout=2)  # the close blocks on the operator's row meanwhile: no signal

    monkeypatch.setattr(lifecycle, "_expire", expire_then_let_the_close_in)

    def close():
        first_closed.wait(timeout=10)
        try:
            return services.close_chat(widget=widget, chat=shared[1]).status
        finally:
            closed.set()

    results = race([lambda: services.sweep_idle_chats(now=now)["expired"], close])
    assert results == [2, Chat.Status.EXPIRED]
    # (The close's chat was talked in: the sweep's second pass may make it active again.)
    swept = Chat.objects.filter(pk__in=[alone.pk, shared[0].pk])
    assert set(swept.values_list("status", flat=True)) == {Chat.Status.EXPIRED}
