"""Fixtures of the statistics tests: a controllable clock for the chat services and helpers that
drive conversations through apps.chats.services (so the facts are maintained as in production)."""

from __future__ import annotations

from datetime import date, datetime, time, timedelta
from types import SimpleNamespace

import pytest

from apps.agents.models import Agent
from apps.chats import services
from apps.chats.models import Chat, ChatTransfer, Rating
from apps.chats.services import attribution, contacts, lifecycle, messages, state
from apps.chats.tests.factories import ContactFactory
from apps.core.timeparse import business_tz
from tests.support.factories import AgentFactory

MSK = business_tz()


def msk(y: int, m: int, d: int, hh: int = 0, mm: int = 0, ss: int = 0) -> datetime:
    return datetime(y, m, d, hh, mm, ss, tzinfo=MSK)


def midnight(day: date) -> datetime:
    return datetime.combine(day, time.min, tzinfo=MSK)


class Clock:
    """`timezone.now()` of the modules of apps.chats.services and the creation-time defaults of chats, transfers
    and ratings: moves only when told."""

    def __init__(self) -> None:
        self.current = msk(2025, 1, 15, 12)

    def now(self) -> datetime:
        return self.current

    def set(self, moment: datetime) -> None:
        self.current = moment

    def advance(self, **kwargs) -> datetime:
        self.current += timedelta(**kwargs)
        return self.current


_TIMED_FIELDS = [(Chat, "created_at"), (Chat, "updated_at"), (ChatTransfer, "created_at"), (Rating, "created_at")]


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch):
    fake = Clock()
    for module in (attribution, contacts, lifecycle, messages, state):  # each looks `timezone.now` up itself
        monkeypatch.setattr(module, "timezone", SimpleNamespace(now=fake.now))
    fields = [model._meta.get_field(name) for model, name in _TIMED_FIELDS]
    for field in fields:
        monkeypatch.setattr(field, "default", fake.now)
        field.__dict__.pop("_get_default", None)  # Field caches its default callable
    yield fake
    for field in fields:
        field.__dict__.pop("_get_default", None)


class Conversations:
    """Conversations of one widget, driven through the chat services."""

    def __init__(self, widget, clock: Clock):
        self.widget, self.clock = widget, clock
        self.human = AgentFactory(widget=widget, name="Human")
        self.other = AgentFactory(widget=widget, name="Other")
        self.ai = AgentFactory(widget=widget, name="Bot", type=Agent.Type.AI)

    def at(self, moment: datetime) -> Conversations:
        self.clock.set(moment)
        return self

    def visitor(self, *, channel: str = "widget", body: str = "hello", contact=None) -> Chat:
        contact = contact or ContactFactory(widget=self.widget)
        message = services.post_client_message(
            widget=self.widget, contact=contact, data=services.MessageInput(body=body), channel=channel
        )
        return Chat.objects.get(pk=message.chat_id)

    def client_says(self, chat: Chat, body: str = "again") -> None:
        services.post_client_message(
            widget=self.widget, contact=chat.contact, data=services.MessageInput(body=body), channel=chat.channel
        )

    def reply(self, chat: Chat, agent: Agent | None = None, *, visibility: str = "public") -> None:
        services.post_agent_message(
            widget=self.widget,
            chat=chat,
            agent=agent or self.human,
            data=services.MessageInput(body="reply", visibility=visibility),
        )

    def transfer(self, chat: Chat, to: Agent) -> None:
        services.transfer_chat(widget=self.widget, chat=chat, to_agent=to)

    def accept(self, chat: Chat, agent: Agent) -> None:
        services.accept_chat(widget=self.widget, chat=chat, agent=agent)

    def rate(self, chat: Chat, value: int) -> None:
        services.rate_chat(widget=self.widget, chat=chat, value=value)


@pytest.fixture
def talk(widget, clock) -> Conversations:
    return Conversations(widget, clock)
