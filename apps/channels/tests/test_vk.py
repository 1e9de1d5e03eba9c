"""VK communities against a loopback fake of the VK API: connect by id, club name or link,
list, primary, DELETE keeping the record with 502 when VK does not confirm, the Callback API hook
(confirmation, secret, redelivery) and an operator message sent with messages.send."""

from __future__ import annotations

import hashlib
import json
import uuid

import pytest

from apps.billing.models import AccountPlan, Plan
from apps.channels.models import InboundUpdate, MessengerConnection, VkCommunity
from apps.channels.tests.vk_fake import VkFake
from apps.chats import services as chat_services
from apps.chats.models import Chat, Message
from apps.core import crypto
from apps.webhooks import services as engine
from apps.webhooks.models import Delivery
from tests.support.factories import AgentFactory
from tests.support.plugin import assert_problem

pytestmark = pytest.mark.django_db

TOKEN = "vk1.a.community-token-0123456789"
GROUP = {"id": 218000001, "name": "My Shop", "screen_name": "myshop"}
URL = "/api/v1/messengers/vk/communities"


@pytest.fixture
def vk(settings, monkeypatch):
    fake = VkFake(valid_tokens={TOKEN}, communities={"myshop": GROUP, "218000001": GROUP}).start()
    settings.OUTBOUND_ALLOW_LOOPBACK = True
    settings.PROVIDER_API_BASE_VK = fake.base
    settings.PUBLIC_BASE_URL = "https://chat.example.com"
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(fake.ca_path))
    yield fake
    fake.stop()


@pytest.fixture
def paid(widget):
    plan = Plan.objects.create(slug="test-pro", name="Test Pro", is_paid=True, paid_features=["messengers"])
    AccountPlan.objects.create(account=widget.account, plan=plan)


def idem() -> dict:
    return {"HTTP_X_SERVICE_IDEMPOTENCY_KEY": str(uuid.uuid4())}


def connect(api, community="myshop", token=TOKEN):
    return api(scopes=["messengers:write"]).post(URL, {"token": token, "community": community}, format="json", **idem())


@pytest.mark.parametrize("given", ["myshop", "218000001", "club218000001", "https://vk.com/myshop"])
def test_connect_by_id_club_name_or_link(api, widget, vk, paid, given):
    response = connect(api, given)
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["community_id"] == GROUP["id"] and body["is_primary"] is True
    assert body["webhook"] == {"attempted": True, "status": "registered"}
    assert vk.methods() == [
        "groups.getById",
        "groups.getCallbackConfirmationCode",
        "groups.addCallbackServer",
        "groups.setCallbackSettings",
    ]
    added = dict(vk.calls[2][1])
    hook = MessengerConnection.objects.get(widget=widget, provider="vk")
    assert added["url"] == f"https://chat.example.com/api/hooks/vk/{hook.hook_id}/"
    row = VkCommunity.objects.get()
    assert crypto.decrypt_secret(row.secret_encrypted) == added["secret_key"]
    assert TOKEN not in row.token_encrypted and "token" not in body


def test_a_rejected_token_or_unknown_community_is_422_and_stores_nothing(api, vk, paid):
    assert_problem(connect(api, token="vk1.a.wrong-token-000000"), 422, "credential_rejected")
    assert_problem(connect(api, "nosuchclub"), 422, "credential_rejected")
    assert_problem(connect(api, "https://example.com/myshop"), 422)
    assert_problem(connect(api, "https://[vk.com/myshop"), 422)
    assert not VkCommunity.objects.exists()


def test_no_answer_from_vk_is_502(api, vk, paid, settings):
    settings.PROVIDER_API_BASE_VK = "https://127.0.0.1:9"
    assert_problem(connect(api), 502, "provider_failed")
    assert not VkCommunity.objects.exists()


def test_connect_needs_a_paid_plan(api, vk):
    assert_problem(connect(api), 409, "plan_required")
    assert vk.calls == []


def test_list_primary_and_the_vk_row(api, widget, vk, paid):
    vk.communities["other"] = {"id": 5, "name": "Other", "screen_name": "other"}
    first = connect(api).json()
    second = connect(api, "other").json()
    assert second["is_primary"] is False
    client = api(scopes=["messengers:read", "messengers:write"])
    listed = client.get(URL).json()
    assert [c["id"] for c in listed["data"]] == [second["id"], first["id"]]
    made = client.post(f"{URL}/{second['id']}/primary", **idem())
    assert made.status_code == 200 and made.json()["is_primary"] is True
    assert VkCommunity.objects.get(pk=first["id"]).is_primary is False
    row = client.get("/api/v1/messengers/vk").json()
    assert row == {"provider": "vk", "connected": True, "writable": False, "has_token": True}


def test_a_foreign_community_is_404(api, vk, paid, other_widget):
    foreign = VkCommunity.objects.create(widget=other_widget, community_id=9, token_encrypted="x", secret_encrypted="x")
    client = api(scopes=["messengers:write"])
    assert_problem(client.post(f"{URL}/{foreign.pk}/primary", **idem()), 404)
    assert_problem(client.delete(f"{URL}/{foreign.pk}"), 404)


def test_delete_keeps_the_record_and_answers_502_when_vk_does_not_confirm(api, vk, paid):
    community = connect(api).json()
    vk.fail_delete = True
    assert_problem(api(scopes=["messengers:write"]).delete(f"{URL}/{community['id']}"), 502, "provider_failed")
    assert VkCommunity.objects.filter(pk=community["id"]).exists()
    vk.fail_delete = False
    assert api(scopes=["messengers:write"]).delete(f"{URL}/{community['id']}").status_code == 204
    assert not VkCommunity.objects.exists()
    assert vk.methods()[-1] == "groups.deleteCallbackServer"


def vk_event(secret, event_id="ev-1", text="Hello"):
    return {
        "type": "message_new",
        "event_id": event_id,
        "v": "5.199",
        "group_id": GROUP["id"],
        "secret": secret,
        "object": {"message": {"id": 11, "from_id": 777, "peer_id": 777, "text": text, "date": 1700000000}},
    }


def post_hook(client, hook, body):
    return client.post(f"/api/hooks/vk/{hook.hook_id}/", data=json.dumps(body), content_type="application/json")


def test_the_callback_hook_confirms_checks_the_secret_and_dedupes(client, api, widget, vk, paid):
    connect(api)
    hook = MessengerConnection.objects.get(provider="vk")
    secret = crypto.decrypt_secret(VkCommunity.objects.get().secret_encrypted)
    confirmation = post_hook(client, hook, {"type": "confirmation", "group_id": GROUP["id"]})
    assert confirmation.content == b"a1b2c3d4" and confirmation["Content-Type"].startswith("text/plain")
    assert_problem(post_hook(client, hook, vk_event("forged")), 401)
    assert post_hook(client, hook, vk_event(secret)).content == b"ok"
    assert post_hook(client, hook, vk_event(secret)).content == b"ok"  # redelivered
    chat = Chat.objects.get(widget=widget)
    assert chat.channel == "vk" and chat.messages.count() == 1


def test_event_ids_sharing_their_first_64_characters_are_two_messages(client, api, widget, vk, paid):
    connect(api)
    hook = MessengerConnection.objects.get(provider="vk")
    secret = crypto.decrypt_secret(VkCommunity.objects.get().secret_encrypted)
    prefix = "e" * 64
    for event_id, text in ((prefix + "1", "First"), (prefix + "2", "Second"), (prefix + "2", "Second")):
        assert post_hook(client, hook, vk_event(secret, event_id=event_id, text=text)).content == b"ok"
    assert sorted(Message.objects.values_list("body", flat=True)) == ["First", "Second"]
    assert (
        InboundUpdate.objects.filter(
            update_id__in=[hashlib.sha256((prefix + n).encode()).hexdigest() for n in "12"]
        ).count()
        == 2
    )


def test_a_short_event_id_keeps_its_stored_key(client, api, widget, vk, paid):
    connect(api)
    hook = MessengerConnection.objects.get(provider="vk")
    secret = crypto.decrypt_secret(VkCommunity.objects.get().secret_encrypted)
    event_id = "e" * 64
    post_hook(client, hook, vk_event(secret, event_id=event_id))
    assert list(InboundUpdate.objects.values_list("update_id", flat=True)) == [event_id]


def test_an_operator_message_is_sent_with_messages_send(client, api, widget, vk, paid):
    connect(api)
    hook = MessengerConnection.objects.get(provider="vk")
    secret = crypto.decrypt_secret(VkCommunity.objects.get().secret_encrypted)
    post_hook(client, hook, vk_event(secret))
    chat = Chat.objects.get()
    keyboard = {"buttons": [{"label": "Track", "url": "https://example.com/t", "style": "primary"}]}
    chat_services.post_agent_message(
        widget=widget,
        chat=chat,
        agent=AgentFactory(widget=widget),
        data=chat_services.MessageInput(type=Message.Type.KEYBOARD, body="Pick", keyboard=keyboard),
    )
    assert engine.deliver_due(concurrency=1, max_seconds=10) == 1
    method, params = vk.calls[-1]
    assert method == "messages.send" and params["access_token"] == TOKEN
    assert params["peer_id"] == "777" and params["message"] == "Pick\nTrack: https://example.com/t"
    row = Delivery.objects.get(endpoint__owner="messenger:vk")
    assert row.status == "delivered" and TOKEN not in row.body


def test_delete_vk_removes_every_community_at_vk_first(api, vk, paid):
    connect(api)
    assert api(scopes=["messengers:write"]).delete("/api/v1/messengers/vk").status_code == 204
    assert not VkCommunity.objects.exists() and vk.methods()[-1] == "groups.deleteCallbackServer"
    row = api(scopes=["messengers:read"]).get("/api/v1/messengers/vk").json()
    assert row["connected"] is False
