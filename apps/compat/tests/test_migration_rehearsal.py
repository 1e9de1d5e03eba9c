"""Migration rehearsal: the legacy platform's documented Bot API and Chat API payloads
(data/legacy_examples.json, kept as published) replayed through our routes, as an integration
does after swapping the base URL. Only the ids that must name our rows (chat_id, client_id, the
sender of a Chat API message) are replaced. Asserts the chats, the messages, the replies as the
integration receives them, and the legacy webhooks' view of the same chats."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from apps.agents import selectors as agent_selectors
from apps.channels.models import CustomChannel
from apps.chats import services as chat_services
from apps.chats.models import Chat, Message
from apps.compat import services
from apps.core.models import OutboxEvent
from apps.webhooks import payloads as webhook_payloads
from apps.webhooks import services as webhooks
from tests.support.factories import AgentFactory

pytestmark = pytest.mark.django_db

EXAMPLES = json.loads((Path(__file__).parent / "data" / "legacy_examples.json").read_text(encoding="utf-8"))


def shape(value):
    """The structure of a JSON value: keys and member types, not the values."""
    if isinstance(value, dict):
        return {key: shape(member) for key, member in value.items()}
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    return type(value).__name__


def replay(example: dict, **ids) -> str:
    body = copy.deepcopy(example)
    body.update(ids)
    return json.dumps(body)


def test_bot_api_rehearsal(client, widget, receiver, monkeypatch, django_capture_on_commit_callbacks):
    bot, token, _ = services.create_compat_bot(widget=widget, url=receiver.url("/bot"))
    docs = EXAMPLES["bot"]
    url = f"/api/compat/legacy/bot/{token}"

    # 1. A visitor writes; the bot receives CLIENT_MESSAGE in the documented shape.
    contact = chat_services.create_contact(widget=widget, name="John Smith", email="john@example.com")
    with django_capture_on_commit_callbacks(execute=True):
        first = chat_services.post_client_message(
            widget=widget, contact=contact, data=chat_services.MessageInput(body="Can you help me?")
        )
    webhooks.deliver_due(concurrency=1, max_seconds=10)
    sent = receiver.wait_for(1)[0].json()
    documented = copy.deepcopy(docs["client_message"])
    del documented["sender"]["url"]  # the page the visitor is on: the widget API does not know it
    sent_shape, documented_shape = shape(sent), shape(documented)
    sent_shape["sender"]["id"] = documented_shape["sender"]["id"]  # ours is the contact guid (a string)
    assert sent_shape == documented_shape
    chat_id, client_id = sent["chat_id"], sent["client_id"]
    assert chat_id == str(first.chat_id) and client_id == contact.guid
    assert sent["sender"]["name"] == "John Smith" and sent["sender"]["has_contacts"] is True

    # 2. The bot answers with each documented BOT_MESSAGE.
    ids = {"chat_id": chat_id, "client_id": client_id}
    text = client.post(url, replay(docs["bot_message_text"], **ids), content_type="application/json")
    markdown = client.post(url, replay(docs["bot_message_markdown"], **ids), content_type="application/json")
    buttons = client.post(url, replay(docs["bot_message_buttons"], **ids), content_type="application/json")
    assert [r.status_code for r in (text, markdown, buttons)] == [200, 200, 200]
    written = list(Message.objects.filter(chat_id=first.chat_id, agent=bot.agent).order_by("pk"))
    assert [m.body for m in written] == [
        "Hello! How can I help you?",
        "**Delivery** takes _two_ days",
        "What are you interested in?\nChoose an option\n• Delivery\n• Payment",
    ]
    assert written[1].markdown == "**Delivery** takes _two_ days"
    assert all(m.author_kind == Message.Author.AI for m in written)

    # 3. INVITE_AGENT: nobody online is informational; with a person online the chat is theirs.
    invite = replay(docs["invite_agent"], **ids)
    nobody = client.post(url, invite, content_type="application/json")
    assert (nobody.status_code, nobody.json()) == (200, {"status": "no_agents_online"})
    person = AgentFactory(widget=widget, name="Anna")
    monkeypatch.setattr(agent_selectors, "PRESENCE_SOURCE", lambda w: {person.pk})
    invited = client.post(url, invite, content_type="application/json")
    assert invited.json() == {"status": "agent_invited", "agent_id": person.pk}
    chat = Chat.objects.get(pk=first.chat_id)
    assert chat.agent_id == person.pk and chat.channel == "widget"

    # 4. The legacy webhooks describe the same chat: chat_updated names our chat id (the Bot API's,
    # as a number) and the person who took it.
    transferred = OutboxEvent.objects.filter(widget=widget, type="chat.transferred").get()
    legacy = webhook_payloads.legacy_envelope(transferred)
    assert legacy["event_name"] == "chat_updated"
    assert str(legacy["chat_id"]) == chat_id and legacy["visitor"]["id"] == client_id
    assert legacy["agent"] == {"id": person.pk, "name": "Anna", "email": person.email}

    # 5. The visitor's next message reaches the person, not the bot.
    with django_capture_on_commit_callbacks(execute=True):
        chat_services.post_client_message(
            widget=widget, contact=contact, data=chat_services.MessageInput(body="thanks")
        )
    webhooks.deliver_due(concurrency=1, max_seconds=10)
    assert len(receiver.snapshot()) == 1


def test_chat_api_rehearsal(client, widget, receiver, monkeypatch):
    channel_id, secret = services.create_compat_channel(widget=widget, url=receiver.url("/chat"))
    docs = EXAMPLES["chat"]
    base = f"/api/compat/legacy/chat/{secret}"

    # Status first, as the documented flow does: nobody online, then someone.
    assert client.get(f"{base}/status").content == b"0"
    person = AgentFactory(widget=widget, name="Anna")
    monkeypatch.setattr(agent_selectors, "PRESENCE_SOURCE", lambda w: {person.pk})
    assert client.get(f"{base}/status").content == b"1"

    # The documented client message, as published.
    inbound = client.post(base, json.dumps(docs["client_message"]), content_type="application/json")
    assert inbound.status_code == 202
    chat = Chat.objects.get(pk=inbound.json()["chat_id"])
    assert chat.channel == f"ch{channel_id}" and chat.contact.name == "Ivan"
    assert chat.messages.get().body == "Hello! Do you deliver to Kazan?"

    # The operator answers; the integration receives the documented agent message shape.
    reply = chat_services.post_agent_message(
        widget=widget, chat=chat, agent=person, data=chat_services.MessageInput(body="Yes, in two days.")
    )
    webhooks.deliver_due(concurrency=1, max_seconds=10)
    received = receiver.wait_for(1)[0].json()
    assert shape(received) == shape(docs["agent_message"])
    assert received == {
        "sender": {"id": str(person.pk), "name": "Anna"},
        "recipient": {"id": docs["client_message"]["sender"]["id"]},
        "message": {"type": "text", "text": "Yes, in two days.", "id": str(reply.pk)},
    }
    assert CustomChannel.objects.get(pk=channel_id).wire_format == "legacy_chat"
