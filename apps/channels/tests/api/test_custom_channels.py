"""Custom channels through the REST API: registration (secret once, encrypted at rest), read,
status, inbound delivery creating the contact and the `ch{id}` chat, and the shared API rules."""

from __future__ import annotations

import uuid

import pytest

from apps.agents import selectors as agent_selectors
from apps.channels.models import CustomChannel, ExternalContact
from apps.chats.models import Chat, Contact, Message
from apps.core import crypto
from tests.support.factories import AgentFactory
from tests.support.plugin import assert_problem

pytestmark = pytest.mark.django_db

CHANNELS = "/api/v1/channels"


def idem() -> dict:
    return {"HTTP_X_SERVICE_IDEMPOTENCY_KEY": str(uuid.uuid4())}


def register(api, url="https://127.0.0.1/hook", name="Shop app", scopes=("channels:register",)):
    return api(scopes=list(scopes)).post(CHANNELS, {"name": name, "url": url}, format="json", **idem())


@pytest.fixture(autouse=True)
def loopback(settings):
    settings.OUTBOUND_ALLOW_LOOPBACK = True


@pytest.fixture
def channel(widget) -> CustomChannel:
    return CustomChannel.objects.create(
        widget=widget, name="App", url="https://127.0.0.1/hook", secret_encrypted=crypto.encrypt_secret("s" * 32)
    )


def inbound(client_id="u-1", channel_id="room-1", text="Hello"):
    return {"external_client_id": client_id, "external_channel_id": channel_id, "message": {"text": text}}


# --- registration ---------------------------------------------------------------------------------


def test_register_answers_201_with_the_secret_once_and_stores_it_encrypted(api, widget):
    response = register(api)
    assert response.status_code == 201, response.content
    body = response.json()
    assert set(body) == {"id", "name", "url", "is_active", "created_at", "secret"}
    assert body["is_active"] is True and body["name"] == "Shop app"
    assert body["secret"].startswith("whsec_")
    row = CustomChannel.objects.get(pk=body["id"], widget=widget)
    assert body["secret"] not in row.secret_encrypted
    assert crypto.decrypt_secret(row.secret_encrypted) == body["secret"]
    read = api(scopes=["channels:read"]).get(f"{CHANNELS}/{body['id']}").json()
    assert "secret" not in read and read["is_active"] is True


def test_register_needs_channels_register(api):
    body = assert_problem(register(api, scopes=("channels:write", "channels:read")), 403, "missing_scope")
    assert body["required_scopes"] == ["channels:register"]
    assert not CustomChannel.objects.exists()


def test_register_needs_an_idempotency_key(api):
    response = api(scopes=["channels:register"]).post(
        CHANNELS, {"name": "x", "url": "https://127.0.0.1/h"}, format="json"
    )
    assert_problem(response, 400, "idempotency_key_missing")


@pytest.mark.parametrize(
    "payload, field",
    [
        ({"name": "x", "url": "http://127.0.0.1/h"}, "url"),
        ({"name": "x", "url": "https://user:pw@127.0.0.1/h"}, "url"),
        ({"name": "x", "url": "https://10.0.0.1/h"}, "url"),
        ({"name": "", "url": "https://127.0.0.1/h"}, "name"),
        ({"name": 5, "url": "https://127.0.0.1/h"}, "name"),
        ({"url": "https://127.0.0.1/h"}, "name"),
        ({"name": "x", "url": "https://127.0.0.1/h", "secret": "mine"}, "secret"),
    ],
)
def test_register_refuses_bad_input_and_stores_nothing(api, payload, field):
    response = api(scopes=["channels:register"]).post(CHANNELS, payload, format="json", **idem())
    body = assert_problem(response, 422)
    assert field in body["errors"], body
    assert not CustomChannel.objects.exists()


# --- read and status -----------------------------------------------------------------------------


def test_read_shows_is_active_and_a_disabled_channel_stays_readable(api, channel):
    channel.is_active = False
    channel.save()
    body = api(scopes=["channels:read"]).get(f"{CHANNELS}/{channel.pk}").json()
    assert body == {
        "id": channel.pk,
        "name": "App",
        "url": "https://127.0.0.1/hook",
        "is_active": False,
        "created_at": channel.created_at.isoformat(),
    }


def test_a_foreign_or_missing_channel_is_the_same_404(api, channel, other_widget):
    foreign = CustomChannel.objects.create(widget=other_widget, name="F", url="https://127.0.0.1/f")
    client = api(scopes=["channels:read", "channels:write"])
    for pk in (foreign.pk, 999999, "99999999999999999999999"):
        assert_problem(client.get(f"{CHANNELS}/{pk}"), 404, "not_found")
        assert_problem(client.get(f"{CHANNELS}/{pk}/status"), 404, "not_found")
        assert_problem(client.post(f"{CHANNELS}/{pk}/messages", inbound(), format="json", **idem()), 404)
    assert not Chat.objects.exists()


def test_read_needs_channels_read(api, channel):
    assert_problem(api(scopes=["channels:write"]).get(f"{CHANNELS}/{channel.pk}/status"), 403, "missing_scope")


def test_status_is_0_with_nobody_answering(api, channel):
    assert api(scopes=["channels:read"]).get(f"{CHANNELS}/{channel.pk}/status").json() == {"online": 0}


def test_status_is_1_while_a_human_operator_is_online(api, channel, widget, monkeypatch):
    agent = AgentFactory(widget=widget)
    monkeypatch.setattr(agent_selectors, "PRESENCE_SOURCE", lambda w: {agent.pk})
    assert api(scopes=["channels:read"]).get(f"{CHANNELS}/{channel.pk}/status").json() == {"online": 1}
    channel.is_active = False
    channel.save()
    assert api(scopes=["channels:read"]).get(f"{CHANNELS}/{channel.pk}/status").json() == {"online": 0}


# --- inbound --------------------------------------------------------------------------------------


def test_first_inbound_message_creates_the_contact_and_the_ch_chat(api, channel, widget, captured_events):
    response = api(scopes=["channels:write"]).post(
        f"{CHANNELS}/{channel.pk}/messages", inbound(), format="json", **idem()
    )
    assert response.status_code == 202, response.content
    body = response.json()
    chat = Chat.objects.get(pk=body["chat_id"], widget=widget)
    assert chat.channel == f"ch{channel.pk}"
    assert chat.contact.guid == body["client_id"]
    message = Message.objects.get(pk=body["message_id"])
    assert (message.body, message.author_kind) == ("Hello", Message.Author.CLIENT)
    link = ExternalContact.objects.get(widget=widget, channel=chat.channel, external_id="u-1")
    assert link.contact_id == chat.contact_id and link.address == "room-1"
    types = [t for t, _ in captured_events()]
    assert types == ["chat.created", "message.created"]
    assert captured_events()[1][1]["source"] == "channel"


def test_later_messages_of_the_same_client_go_into_the_same_chat(api, channel):
    client = api(scopes=["channels:write"])
    first = client.post(f"{CHANNELS}/{channel.pk}/messages", inbound(), format="json", **idem()).json()
    second = client.post(
        f"{CHANNELS}/{channel.pk}/messages", inbound(channel_id="room-2", text="again"), format="json", **idem()
    ).json()
    other = client.post(f"{CHANNELS}/{channel.pk}/messages", inbound(client_id="u-2"), format="json", **idem()).json()
    assert first["chat_id"] == second["chat_id"] != other["chat_id"]
    assert Contact.objects.count() == 2
    assert ExternalContact.objects.get(external_id="u-1").address == "room-2"


def test_inbound_to_a_disabled_channel_is_409_and_creates_nothing(api, channel):
    channel.is_active = False
    channel.save()
    response = api(scopes=["channels:write"]).post(
        f"{CHANNELS}/{channel.pk}/messages", inbound(), format="json", **idem()
    )
    assert_problem(response, 409, "channel_disabled")
    assert not Contact.objects.exists() and not Chat.objects.exists()


def test_inbound_needs_channels_write(api, channel):
    response = api(scopes=["channels:read"]).post(
        f"{CHANNELS}/{channel.pk}/messages", inbound(), format="json", **idem()
    )
    assert_problem(response, 403, "missing_scope")


@pytest.mark.parametrize(
    "payload, field",
    [
        ({"external_channel_id": "r", "message": {"text": "x"}}, "external_client_id"),
        ({**inbound(), "external_client_id": 42}, "external_client_id"),
        ({**inbound(), "external_channel_id": ""}, "external_channel_id"),
        ({**inbound(), "message": {"text": "   "}}, "message.text"),
        ({**inbound(), "message": {"text": "x", "type": "image"}}, "message.type"),
        ({**inbound(), "message": "hello"}, "message"),
        ({**inbound(), "extra": 1}, "extra"),
    ],
)
def test_inbound_refuses_bad_input_and_changes_nothing(api, channel, payload, field):
    response = api(scopes=["channels:write"]).post(
        f"{CHANNELS}/{channel.pk}/messages", payload, format="json", **idem()
    )
    body = assert_problem(response, 422)
    assert any(key == field or key.startswith(field + ".") for key in body["errors"]), body
    assert not Chat.objects.exists() and not Contact.objects.exists()
