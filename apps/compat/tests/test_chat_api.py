"""The legacy Chat API: inbound text at /api/compat/legacy/chat/{secret}, operator replies in its
envelope, the bare 0/1 status, path secrets."""

from __future__ import annotations

import json

import pytest

from apps.agents import selectors as agent_selectors
from apps.channels.models import CustomChannel
from apps.chats import services as chat_services
from apps.chats.models import Chat, Contact, Message
from apps.compat import services
from apps.webhooks import services as webhooks
from apps.webhooks.models import Delivery
from tests.support.factories import AgentFactory
from tests.support.plugin import assert_problem

pytestmark = pytest.mark.django_db


@pytest.fixture
def channel_and_secret(widget, receiver):
    channel_id, secret = services.create_compat_channel(widget=widget, url=receiver.url("/chat"))
    return CustomChannel.objects.get(pk=channel_id), secret


def send(client, secret, body, raw=False):
    data = body if raw else json.dumps(body)
    return client.post(f"/api/compat/legacy/chat/{secret}", data=data, content_type="application/json")


def inbound(sender="2165", text="Hello", name="Ivan"):
    return {
        "sender": {"id": sender, "name": name},
        "recipient": {"id": "r-1"},
        "message": {"type": "text", "text": text},
    }


def test_inbound_text_creates_the_contact_and_the_chat(client, widget, channel_and_secret):
    channel, secret = channel_and_secret
    response = send(client, secret, inbound())
    assert response.status_code == 202, response.content
    chat = Chat.objects.get(pk=response.json()["chat_id"], widget=widget)
    assert chat.channel == f"ch{channel.pk}" and chat.contact.name == "Ivan"
    again = send(client, secret, {**inbound(text="more"), "sender": {"id": 2165}})
    assert again.json()["chat_id"] == chat.pk and Contact.objects.count() == 1


def test_operator_replies_go_back_in_the_legacy_envelope(client, widget, channel_and_secret, receiver):
    channel, secret = channel_and_secret
    chat = Chat.objects.get(pk=send(client, secret, inbound()).json()["chat_id"])
    agent = AgentFactory(widget=widget, name="Anna")
    keyboard = {"buttons": [{"label": "Track", "url": "https://example.com/t", "style": "primary"}]}
    message = chat_services.post_agent_message(
        widget=widget,
        chat=chat,
        agent=agent,
        data=chat_services.MessageInput(type=Message.Type.KEYBOARD, body="Yes", keyboard=keyboard),
    )
    assert webhooks.deliver_due(concurrency=1, max_seconds=10) == 1
    hit = receiver.wait_for(1)[0]
    assert hit.path == "/chat"
    assert hit.json() == {
        "sender": {"id": str(agent.pk), "name": "Anna"},
        "recipient": {"id": "2165"},
        "message": {"type": "text", "text": "Yes\nTrack: https://example.com/t", "id": str(message.pk)},
    }
    assert hit.header("x-service-signature") == webhooks.service_signature(secret, hit.body)
    assert Delivery.objects.get().status == "delivered"


def test_status_is_a_bare_0_or_1_as_text(client, widget, channel_and_secret, monkeypatch):
    channel, secret = channel_and_secret
    response = client.get(f"/api/compat/legacy/chat/{secret}/status")
    assert response.status_code == 200 and response.content == b"0"
    assert response["Content-Type"].startswith("text/plain")
    human = AgentFactory(widget=widget)
    monkeypatch.setattr(agent_selectors, "PRESENCE_SOURCE", lambda w: {human.pk})
    assert client.get(f"/api/compat/legacy/chat/{secret}/status").content == b"1"


def test_unknown_secrets_are_404_and_a_disabled_channel_403(client, channel_and_secret):
    channel, secret = channel_and_secret
    near = secret[:-1] + ("0" if secret[-1] != "0" else "1")
    for wrong in (near, "0" * 48, "x"):
        assert_problem(send(client, wrong, inbound()), 404)
        assert_problem(client.get(f"/api/compat/legacy/chat/{wrong}/status"), 404)
    CustomChannel.objects.filter(pk=channel.pk).update(is_active=False)
    assert_problem(send(client, secret, inbound()), 403, "channel_disabled")
    assert_problem(client.get(f"/api/compat/legacy/chat/{secret}/status"), 403, "channel_disabled")
    assert not Chat.objects.exists()


@pytest.mark.parametrize(
    "raw",
    [
        "nope",
        "{}",
        '{"sender": {"id": "1"}, "recipient": {"id": "r"}, "message": {"type": "photo", "text": "x"}}',
        '{"sender": {"id": "1"}, "recipient": {"id": "r"}, "message": {"type": "text", "text": "  "}}',
        '{"sender": {"id": true}, "recipient": {"id": "r"}, "message": {"type": "text", "text": "x"}}',
        '{"sender": {"id": "1"}, "message": {"type": "text", "text": "x"}}',
        '{"sender": {"id": "1\\u0000"}, "recipient": {"id": "r"}, "message": {"type": "text", "text": "x"}}',
        '{"sender": {"id": "1"}, "recipient": {"id": "r\\u0000"}, "message": {"type": "text", "text": "x"}}',
        '{"sender": {"id": "\\ud800"}, "recipient": {"id": "r"}, "message": {"type": "text", "text": "x"}}',
    ],
)
def test_malformed_bodies_are_422(client, channel_and_secret, raw):
    _, secret = channel_and_secret
    assert_problem(send(client, secret, raw, raw=True), 422)
    assert not Chat.objects.exists()


def test_create_compat_channel_command(widget, receiver):
    from io import StringIO

    from django.core.management import call_command

    out = StringIO()
    call_command("create_compat_channel", "--widget", widget.button_guid, "--url", receiver.url("/c"), stdout=out)
    printed = json.loads(out.getvalue())
    channel = CustomChannel.objects.get(pk=printed["channel_id"])
    assert channel.wire_format == "legacy_chat" and printed["secret"] not in channel.path_secret_hash
