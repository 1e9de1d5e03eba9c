"""The assignment service: the queue, hand-backs, re-routing after a restart, the AI's hand-over,
and the invariants as properties over random sequences of arrivals, presence changes and closes."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apps.agents import services as agent_services
from apps.chats import services as chat_services
from apps.chats.models import Chat
from apps.core import ports
from apps.routing import services, tasks
from apps.routing.models import ChatRouting, OperatorRouting
from tests.support.factories import WidgetFactory

from .helpers import open_loads, operators, presence, queued_ids, routing_on, visitor_writes

pytestmark = pytest.mark.django_db


def test_a_visitor_with_nobody_online_waits_and_is_served_when_an_operator_comes(widget, monkeypatch, captured_events):
    online = presence(monkeypatch)
    routing_on(widget)
    chat = visitor_writes(widget)
    assert queued_ids(widget) == [chat.pk]
    assert services.serve(widget) == 0
    (operator,) = operators(widget, 1, online)
    assert services.serve(widget) == 1
    chat.refresh_from_db()
    assert chat.agent_id == operator.pk
    assert queued_ids(widget) == []
    row = ChatRouting.objects.get(chat=chat)
    assert row.assigned_by == "routing" and row.queued_at is not None and row.wait_seconds is not None
    assigned = [data for kind, data in captured_events() if kind == "chat.assigned"]
    assert [(d["chat_id"], d["agent_id"], d["by"]) for d in assigned] == [(chat.pk, operator.pk, "routing")]


def test_manual_mode_queues_nothing(widget, monkeypatch):
    online = presence(monkeypatch)
    operators(widget, 1, online)
    routing_on(widget, mode="manual")
    visitor_writes(widget)
    assert queued_ids(widget) == []
    assert services.serve(widget) == 0


def test_the_queue_is_served_first_in_first_out(widget, monkeypatch):
    online = presence(monkeypatch)
    routing_on(widget, capacity=1)
    chats = [visitor_writes(widget, f"#{n}") for n in range(4)]
    (first,) = operators(widget, 1, online)
    services.serve(widget)
    assert Chat.objects.get(pk=chats[0].pk).agent_id == first.pk
    assert queued_ids(widget) == [c.pk for c in chats[1:]]
    chat_services.close_chat(widget=widget, chat=chats[0])
    services.serve(widget)
    assert Chat.objects.get(pk=chats[1].pk).agent_id == first.pk
    assert queued_ids(widget) == [c.pk for c in chats[2:]]


def test_an_operator_offline_past_the_grace_hands_their_chats_back_to_the_head(widget, monkeypatch):
    online = presence(monkeypatch)
    routing_on(widget, capacity=1)
    gone, other = operators(widget, 2, online)
    online.online.discard(other.pk)
    mine = visitor_writes(widget, "first")
    services.serve(widget)
    assert Chat.objects.get(pk=mine.pk).agent_id == gone.pk
    later = visitor_writes(widget, "second")
    assert queued_ids(widget) == [later.pk]

    online.online = {other.pk}
    services.operator_offline(widget=widget, agent_id=gone.pk, now=timezone.now() - timedelta(minutes=1))
    assert services.absent_operators() == [(widget.pk, gone.pk)]
    tasks.tick()
    # The handed-back chat goes to the head: the other operator (capacity 1) takes it, not the later one.
    assert Chat.objects.get(pk=mine.pk).agent_id == other.pk
    assert queued_ids(widget) == [later.pk]
    assert OperatorRouting.objects.get(agent_id=gone.pk).offline_since is None


def test_an_operator_back_within_the_grace_keeps_their_chats(widget, monkeypatch):
    online = presence(monkeypatch)
    routing_on(widget)
    (operator,) = operators(widget, 1, online)
    chat = visitor_writes(widget)
    services.serve(widget)
    services.operator_offline(widget=widget, agent_id=operator.pk)
    services.operator_online(widget=widget, agent_id=operator.pk)
    tasks.tick()
    assert Chat.objects.get(pk=chat.pk).agent_id == operator.pk


def test_a_suspended_operator_s_chats_go_back_to_the_queue(widget, monkeypatch, django_capture_on_commit_callbacks):
    online = presence(monkeypatch)
    routing_on(widget)
    suspended, other = operators(widget, 2, online)
    online.online = {suspended.pk}
    chat = visitor_writes(widget)
    services.serve(widget)
    assert Chat.objects.get(pk=chat.pk).agent_id == suspended.pk
    online.online = {suspended.pk, other.pk}
    with django_capture_on_commit_callbacks(execute=True):
        agent_services.suspend_agent(widget=widget, agent=suspended)
    assert Chat.objects.get(pk=chat.pk).agent_id == other.pk


def test_a_suspended_operator_is_never_eligible(widget, monkeypatch):
    online = presence(monkeypatch)
    routing_on(widget)
    (operator,) = operators(widget, 1, online)
    agent_services.suspend_agent(widget=widget, agent=operator)
    visitor_writes(widget)
    assert services.serve(widget) == 0


def test_rerouting_survives_a_worker_restart_and_never_goes_back(widget, monkeypatch):
    online = presence(monkeypatch)
    routing_on(widget, reroute=30)
    first, second = operators(widget, 2, online)
    chat = visitor_writes(widget)
    services.serve(widget)
    owner = Chat.objects.get(pk=chat.pk).agent_id
    row = ChatRouting.objects.get(chat=chat)
    assert row.reroute_due_at is not None
    # A new worker knows nothing but the stored due time: the beat pass finds it once it is due.
    assert services.overdue_reroutes() == []
    ChatRouting.objects.filter(chat=chat).update(reroute_due_at=timezone.now() - timedelta(seconds=1))
    assert tasks.tick()["rerouted"] == 1
    moved = Chat.objects.get(pk=chat.pk).agent_id
    assert moved != owner and moved in (first.pk, second.pk)
    row.refresh_from_db()
    assert row.reroutes == 1 and row.timed_out == [owner]
    # The second operator times out too: nobody else is eligible, so it stays, due again next pass.
    ChatRouting.objects.filter(chat=chat).update(reroute_due_at=timezone.now() - timedelta(seconds=1))
    assert tasks.tick()["rerouted"] == 0
    assert Chat.objects.get(pk=chat.pk).agent_id == moved
    row.refresh_from_db()
    assert sorted(row.timed_out) == sorted([owner, moved])
    # A third operator comes: the chat moves to them, never back.
    (third,) = operators(widget, 1, online)
    assert tasks.tick()["rerouted"] == 1
    assert Chat.objects.get(pk=chat.pk).agent_id == third.pk


def test_a_visible_reply_stops_the_reroute_timer(widget, monkeypatch):
    online = presence(monkeypatch)
    routing_on(widget, reroute=30)
    (operator,) = operators(widget, 1, online)
    chat = visitor_writes(widget)
    services.serve(widget)
    chat.refresh_from_db()
    note = chat_services.MessageInput(body="internal", visibility="note")
    chat_services.post_agent_message(widget=widget, chat=chat, agent=operator, data=note)
    assert ChatRouting.objects.get(chat=chat).reroute_due_at is not None
    chat_services.post_agent_message(
        widget=widget, chat=chat, agent=operator, data=chat_services.MessageInput(body="Hi")
    )
    assert ChatRouting.objects.get(chat=chat).reroute_due_at is None


def test_a_chat_the_ai_answers_joins_the_queue_when_the_ai_hands_over(widget, monkeypatch, provide_port):
    online = presence(monkeypatch)
    routing_on(widget)
    provide_port(ports.MACHINE_ANSWERER, lambda w: True, key="ai")
    chat = visitor_writes(widget)
    assert queued_ids(widget) == []
    chat_services.await_human(widget=widget, chat=chat, reason="escalation")
    assert queued_ids(widget) == [chat.pk]
    (operator,) = operators(widget, 1, online)
    services.serve(widget)
    assert Chat.objects.get(pk=chat.pk).agent_id == operator.pk


def test_a_closed_chat_leaves_the_queue(widget, monkeypatch):
    presence(monkeypatch)
    routing_on(widget)
    chat = visitor_writes(widget)
    chat_services.close_chat(widget=widget, chat=chat)
    assert queued_ids(widget) == []


# --- the invariants as properties --------------------------------------------------------------------------

STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("arrive"), st.integers(0, 0)),
        st.tuples(st.just("online"), st.integers(0, 3)),
        st.tuples(st.just("offline"), st.integers(0, 3)),
        st.tuples(st.just("close"), st.integers(0, 30)),
    ),
    min_size=1,
    max_size=25,
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=STEPS, mode=st.sampled_from(["round_robin", "least_busy"]))
def test_no_chat_twice_no_operator_over_capacity_and_the_queue_in_order(monkeypatch, steps, mode):
    widget = WidgetFactory()
    online = presence(monkeypatch)
    online.online = set()
    routing_on(widget, mode=mode, capacity=2)
    team = operators(widget, 4)
    for action, n in steps:
        before = queued_ids(widget)
        if action == "arrive":
            visitor_writes(widget)
        elif action == "online":
            online.online.add(team[n].pk)
        elif action == "offline" and team[n].pk in online.online:
            online.online.discard(team[n].pk)
            services.operator_offline(widget=widget, agent_id=team[n].pk)
            services.settle_absent(widget=widget, agent_id=team[n].pk)
        elif action == "close":
            open_chats = list(Chat.objects.filter(widget=widget, status=Chat.Status.ACTIVE).order_by("pk"))
            if open_chats:
                chat_services.close_chat(widget=widget, chat=open_chats[n % len(open_chats)])
        before = [c for c in before if c in set(queued_ids(widget)) | set(_assigned(widget))]
        services.serve(widget)
        after = queued_ids(widget)
        loads = open_loads(widget)
        # Nobody over capacity, and every owner is someone online.
        assert all(count <= 2 for count in loads.values()), loads
        assert set(loads) <= online.online, (loads, online.online)
        # Nobody waits while an online operator has a free slot.
        free = [a for a in online.online if loads.get(a, 0) < 2]
        assert not (after and free), (after, free)
        # The chats served from the queue are its head, in order.
        served = [c for c in before if c not in after]
        assert served == before[: len(served)], (before, after)


def _assigned(widget) -> list[int]:
    return list(Chat.objects.filter(widget=widget, agent__isnull=False).values_list("pk", flat=True))


def test_a_visitor_writing_to_a_chat_whose_operator_left_goes_back_to_the_queue(widget, monkeypatch):
    online = presence(monkeypatch)
    routing_on(widget)
    gone, other = operators(widget, 2, online)
    online.online = {gone.pk}
    chat = visitor_writes(widget, "first")
    services.serve(widget)
    chat_services.close_chat(widget=widget, chat=Chat.objects.get(pk=chat.pk))
    online.online = {other.pk}
    contact = Chat.objects.get(pk=chat.pk).contact
    chat_services.post_client_message(widget=widget, contact=contact, data=chat_services.MessageInput(body="again"))
    assert queued_ids(widget) == [chat.pk]
    services.serve(widget)
    assert Chat.objects.get(pk=chat.pk).agent_id == other.pk


def test_the_settings_change_reaches_the_message_path_at_once(widget, monkeypatch, django_capture_on_commit_callbacks):
    online = presence(monkeypatch)
    operators(widget, 1, online)
    visitor_writes(widget)  # caches `manual`
    with django_capture_on_commit_callbacks(execute=True):
        services.put_settings(
            widget=widget,
            data={
                "mode": "round_robin",
                "default_capacity": 3,
                "reroute_after_seconds": None,
                "show_queue_position": True,
            },
        )
    chat = visitor_writes(widget)
    assert queued_ids(widget) == [chat.pk]
