"""Mentions recorded from the notes that make them, and the notification of the mentioned operator."""

import pytest

from apps.agents.models import Agent
from apps.agents.tests.factories import AIAgentFactory, HumanAgentFactory
from apps.chats import services as chat_services
from apps.chats.models import Message
from apps.chats.tests.factories import ChatFactory, ContactFactory
from apps.mentions import notify, selectors, services
from apps.mentions.models import Mention
from apps.platform.realtime import agent_group

pytestmark = pytest.mark.django_db


@pytest.fixture
def team(widget):
    return {
        "anna": HumanAgentFactory(widget=widget, name="Anna", surname="Petrova"),
        "bob": HumanAgentFactory(widget=widget, name="Bob", surname=""),
        "robo": AIAgentFactory(widget=widget, name="Robo"),
    }


@pytest.fixture
def chat(widget):
    return ChatFactory(contact=ContactFactory(widget=widget))


@pytest.fixture
def pushes(monkeypatch):
    sent = []
    monkeypatch.setattr(notify, "push", lambda groups, frame: sent.append((list(groups), frame)))
    return sent


def note(widget, chat, agent, body, visibility=Message.Visibility.NOTE):
    return chat_services.post_agent_message(
        widget=widget,
        chat=chat,
        agent=agent,
        data=chat_services.MessageInput(body=body, visibility=visibility),
        source="console",
    )


def mentioned(message) -> list[int]:
    return sorted(Mention.objects.filter(message=message).values_list("agent_id", flat=True))


def test_a_note_records_a_mention_of_each_operator_it_names(widget, chat, team):
    message = note(widget, chat, team["anna"], "@bob and @Anna Petrova, look")
    row = Mention.objects.get(message=message)
    assert (row.agent_id, row.by_agent_id, row.chat_id, row.widget_id) == (
        team["bob"].pk,
        team["anna"].pk,
        chat.pk,
        widget.pk,
    )
    assert row.read_at is None and row.created_at == message.created_at


def test_the_author_is_not_mentioned_by_their_own_note(widget, chat, team):
    assert mentioned(note(widget, chat, team["anna"], "note to self @Anna")) == []


def test_ai_operators_and_banned_operators_are_never_mentioned(widget, chat, team):
    gone = HumanAgentFactory(widget=widget, name="Carol", status=Agent.Status.BANNED)
    assert mentioned(note(widget, chat, team["anna"], "@Robo @Carol")) == []
    assert gone.pk not in [entry["id"] for entry in selectors.picker_entries(widget)]
    assert team["robo"].pk not in [entry["id"] for entry in selectors.picker_entries(widget)]


def test_another_widgets_operators_are_never_mentioned(widget, other_widget, chat, team):
    HumanAgentFactory(widget=other_widget, name="Dora")
    assert mentioned(note(widget, chat, team["anna"], "@Dora")) == []


def test_a_reply_the_visitor_sees_mentions_nobody(widget, chat, team):
    assert mentioned(note(widget, chat, team["anna"], "@Bob", visibility=Message.Visibility.PUBLIC)) == []


def test_a_machines_note_mentions_nobody(widget, chat, team):
    assert mentioned(note(widget, chat, team["robo"], "the visitor asked for @Bob")) == []


def test_the_mentioned_operator_alone_is_told_after_the_commit(
    widget, chat, team, pushes, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        message = note(widget, chat, team["anna"], "@Bob can you take this?")
    assert pushes == []  # nothing before the note commits
    for callback in callbacks:
        callback()
    frames = [(groups, frame) for groups, frame in pushes if frame["event"] == "mention"]
    row = Mention.objects.get(message=message)
    assert frames == [
        (
            [agent_group(team["bob"].pk)],
            {
                "event": "mention",
                "mention_id": row.pk,
                "chat_id": chat.pk,
                "message_id": message.pk,
                "by_agent_id": team["anna"].pk,
                "by_name": "Anna Petrova",
                "text": "@Bob can you take this?",
                "unread": 1,
            },
        )
    ]


def test_marking_read_is_idempotent(widget, chat, team):
    message = note(widget, chat, team["anna"], "@bob")
    row = Mention.objects.get(message=message)
    first = services.mark_mention_read(widget=widget, mention=row).read_at
    again = services.mark_mention_read(widget=widget, mention=Mention.objects.get(pk=row.pk)).read_at
    assert first is not None and again == first
    assert selectors.count_unread(widget=widget, agent_id=team["bob"].pk) == 0


def test_the_excerpt_collapses_whitespace_and_is_cut():
    assert notify.excerpt("a\n\n b") == "a b"
    cut = notify.excerpt("x" * 500)
    assert len(cut) == notify.EXCERPT_CHARS and cut.endswith("…")
