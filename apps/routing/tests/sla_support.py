"""Helpers of the SLA tests: a policy, the visitor's and the operators' messages through the chats
services (so the clocks move by the real events), and the clocks as rows."""

from __future__ import annotations

from datetime import UTC, datetime

from apps.agents.models import Agent
from apps.chats import services as chat_services
from apps.chats.models import Chat, Message
from apps.routing.models import SlaClock, SlaPolicy

T0 = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)  # a Tuesday


def make_policy(widget, **kwargs) -> SlaPolicy:
    values = {"name": "Standard", "first_response_seconds": 300, "next_response_seconds": 600}
    values.update(resolution_seconds=3600)
    values.update(kwargs)
    return SlaPolicy.objects.create(widget=widget, **values)


def say(widget, contact, text: str = "Hello?") -> Message:
    return chat_services.post_client_message(widget=widget, contact=contact, data=chat_services.MessageInput(body=text))


def answer(widget, chat: Chat, agent: Agent, *, visibility: str = Message.Visibility.PUBLIC) -> Message:
    return chat_services.post_agent_message(
        widget=widget, chat=chat, agent=agent, data=chat_services.MessageInput(body="Hi!", visibility=visibility)
    )


def clocks(chat, kind: str | None = None) -> list[SlaClock]:
    rows = SlaClock.objects.filter(chat_id=chat.pk).order_by("id")
    return list(rows.filter(kind=kind) if kind else rows)


def breaches(events) -> list[dict]:
    return [data for type_, data in events() if type_ == "sla.breached"]
