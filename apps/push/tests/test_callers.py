"""Each caller of the one notification service pushes to the right operator's devices: a mention,
a chat assigned (not when the operator took it themselves), a chat starting to wait in the queue
(active operators only), an SLA clock about to breach (once)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from apps.agents.models import Agent
from apps.agents.tests.factories import HumanAgentFactory
from apps.chats import services as chat_services
from apps.push import tasks
from apps.routing import services as routing_services
from apps.routing.models import SlaClock

from .conftest import add_device

pytestmark = pytest.mark.django_db


def test_a_mention_pushes_to_the_mentioned_operator(push_svc, olga, chat, widget, django_capture_on_commit_callbacks):
    anna = HumanAgentFactory(widget=widget, name="Anna")
    device, _ = add_device(olga, push_svc, "olga", previews=True)
    add_device(anna, push_svc, "anna")
    with django_capture_on_commit_callbacks(execute=True):
        chat_services.post_agent_message(
            widget=widget,
            chat=chat,
            agent=anna,
            data=chat_services.MessageInput(body="@Olga can you look at the refund?", visibility="note"),
            source="console",
        )
    [hit] = push_svc.rx.wait_for(1)
    assert hit.path == "/push/olga"
    shown = device.read(hit)
    assert (shown["title"], shown["body"]) == ("You were mentioned in a note", "@Olga can you look at the refund?")


def test_a_chat_assigned_by_someone_else_pushes_to_the_assignee(
    push_svc, olga, chat, widget, django_capture_on_commit_callbacks
):
    device, _ = add_device(olga, push_svc, "olga")
    with django_capture_on_commit_callbacks(execute=True):
        chat_services.transfer_chat(widget=widget, chat=chat, to_agent=olga, source="api")
    [hit] = push_svc.rx.wait_for(1)
    assert device.read(hit)["tag"] == f"chat-{chat.pk}-assigned"


def test_taking_a_chat_yourself_pushes_nothing(push_svc, olga, chat, django_capture_on_commit_callbacks):
    add_device(olga, push_svc, "olga")
    console = Client()
    console.force_login(olga.user)
    with django_capture_on_commit_callbacks(execute=True):
        response = console.post(f"/console/chats/{chat.pk}/accept/")
    assert response.status_code in (200, 204, 302, 303)
    chat.refresh_from_db()
    assert chat.agent_id == olga.pk
    assert push_svc.rx.hits == []


def test_a_colleague_transferring_a_chat_in_the_console_pushes_to_the_new_owner(
    push_svc, olga, chat, widget, django_capture_on_commit_callbacks
):
    colleague = HumanAgentFactory(widget=widget, name="Carl")
    chat_services.accept_chat(widget=widget, chat=chat, agent=colleague)
    device, _ = add_device(olga, push_svc, "olga")
    console = Client()
    console.force_login(colleague.user)
    with django_capture_on_commit_callbacks(execute=True):
        response = console.post(f"/console/chats/{chat.pk}/transfer/", {"agent": olga.pk})
    assert response.status_code in (200, 204, 302, 303)
    [hit] = push_svc.rx.wait_for(1)
    assert device.read(hit)["title"] == "A chat was assigned to you"


def test_a_chat_starting_to_wait_pushes_to_the_active_operators(
    push_svc, olga, chat, widget, django_capture_on_commit_callbacks
):
    away = HumanAgentFactory(widget=widget, name="Away", status=Agent.Status.RELAXATION)
    gone = HumanAgentFactory(widget=widget, name="Gone", status=Agent.Status.BANNED)
    device, _ = add_device(olga, push_svc, "olga")
    add_device(away, push_svc, "away")
    add_device(gone, push_svc, "gone")
    with django_capture_on_commit_callbacks(execute=True):
        assert routing_services.enqueue(chat=chat)
    [hit] = push_svc.rx.wait_for(1)
    assert hit.path == "/push/olga"
    assert device.read(hit)["title"] == "A visitor is waiting in the queue"


def clock(widget, chat, *, length: timedelta, due_in: timedelta) -> SlaClock:
    now = timezone.now()
    return SlaClock.objects.create(
        widget=widget,
        chat=chat,
        policy_id=None,
        kind="first_response",
        started_at=now + due_in - length,
        due_at=now + due_in,
    )


def test_an_sla_clock_about_to_breach_warns_the_assignee_once(
    push_svc, olga, chat, widget, django_capture_on_commit_callbacks
):
    chat_services.transfer_chat(widget=widget, chat=chat, to_agent=olga, source="api")
    device, _ = add_device(olga, push_svc, "olga")
    # 20 % of 5 min is 1 min: warned 30 s before; 5 min (the cap) of an hour: warned 4 min before.
    short = clock(widget, chat, length=timedelta(minutes=5), due_in=timedelta(seconds=30))
    long = clock(widget, chat, length=timedelta(hours=1), due_in=timedelta(minutes=4))
    early = clock(widget, chat, length=timedelta(minutes=5), due_in=timedelta(minutes=2))
    with django_capture_on_commit_callbacks(execute=True):
        assert tasks.sla_warnings() == 2
    with django_capture_on_commit_callbacks(execute=True):
        assert tasks.sla_warnings() == 0
    hits = push_svc.rx.wait_for(2)
    assert {device.read(hit)["title"] for hit in hits} == {"A chat is about to miss its response time"}
    warned = set(SlaClock.objects.filter(warned_at__isnull=False).values_list("pk", flat=True))
    assert warned == {short.pk, long.pk} and early.pk not in warned
