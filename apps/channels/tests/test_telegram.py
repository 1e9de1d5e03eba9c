"""Telegram end to end against a loopback fake of the Bot API: reads, PUT (probe, local write,
setWebhook), the probe rejection, a failed registration and its retry through verify, DELETE,
the paid plan, the provider budget, the inbound hook (secret token, redelivered update), and an
operator keyboard message as Telegram receives it (with 429 retry_after)."""

from __future__ import annotations

import json
import logging
import uuid

import pytest

from apps.billing.models import AccountPlan, Plan
from apps.channels import messengers
from apps.channels.models import InboundUpdate, MessengerConnection
from apps.channels.providers import telegram
from apps.channels.tests.tg_fake import TelegramFake
from apps.chats import services as chat_services
from apps.chats.models import Chat, Message
from apps.core import crypto
from apps.core.logging import JSONFormatter
from apps.webhooks import services as engine
from apps.webhooks.models import Delivery
from tests.support.factories import AgentFactory
from tests.support.plugin import assert_problem

pytestmark = pytest.mark.django_db

TOKEN = "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"
BAD_TOKEN = "987654321:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"
TG = "/api/v1/messengers/tg"


@pytest.fixture
def tg(settings, monkeypatch):
    fake = TelegramFake(valid_tokens={TOKEN}).start()
    settings.OUTBOUND_ALLOW_LOOPBACK = True
    settings.PROVIDER_API_BASE_TG = fake.base
    settings.PUBLIC_BASE_URL = "https://chat.example.com"
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(fake.ca_path))
    yield fake
    fake.stop()


@pytest.fixture
def paid(widget):
    plan = Plan.objects.create(slug="test-pro", name="Test Pro", is_paid=True, paid_features=["messengers"])
    AccountPlan.objects.create(account=widget.account, plan=plan)
    return plan


def idem() -> dict:
    return {"HTTP_X_SERVICE_IDEMPOTENCY_KEY": str(uuid.uuid4())}


def put(api, token=TOKEN, **extra):
    return api(scopes=["messengers:write"]).put(TG, {"token": token, **extra}, format="json", **idem())


def connect(api, tg) -> MessengerConnection:
    assert put(api).status_code == 200
    return MessengerConnection.objects.get(provider="tg")


# --- reads ----------------------------------------------------------------------------------------


def test_the_list_has_eleven_rows_and_no_secret(api, widget, tg, paid):
    connect(api, tg)
    body = api(scopes=["messengers:read"]).get("/api/v1/messengers").json()
    rows = {row["provider"]: row for row in body["data"]}
    assert list(rows) == ["tg", "vk", "wa", "vb", "fb", "ok", "mx", "cian", "ali", "apple", "custom"]
    assert rows["tg"] == {"provider": "tg", "connected": True, "writable": True, "has_token": True}
    assert rows["vk"]["writable"] is False and rows["custom"]["writable"] is False
    assert rows["wa"] == {"provider": "wa", "connected": False, "writable": True, "has_token": False, "has_sid": False}
    text = json.dumps(body)
    conn = MessengerConnection.objects.get()
    assert TOKEN not in text and conn.hook_id not in text and "hooks" not in text


def test_an_unknown_provider_is_404(api):
    assert_problem(api(scopes=["messengers:read"]).get("/api/v1/messengers/xx"), 404)


# --- PUT ------------------------------------------------------------------------------------------


def test_put_probes_writes_then_registers_the_webhook(api, widget, tg, paid):
    response = put(api)
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["webhook"] == {"attempted": True, "status": "registered"}
    assert body["connected"] is True and "token" not in body
    assert tg.methods() == ["getMe", "setWebhook"]
    conn = MessengerConnection.objects.get(widget=widget, provider="tg")
    assert TOKEN not in conn.token_encrypted and crypto.decrypt_secret(conn.token_encrypted) == TOKEN
    registered = tg.calls[1].body
    assert registered["url"] == f"https://chat.example.com/api/hooks/tg/{conn.hook_id}/"
    assert registered["secret_token"] == crypto.decrypt_secret(conn.hook_secret_encrypted)
    assert conn.inbound_live is True


def test_a_rejected_token_is_422_and_stores_nothing(api, tg, paid):
    body = assert_problem(put(api, token=BAD_TOKEN), 422, "credential_rejected")
    assert "token" in body["errors"]
    assert tg.methods() == ["getMe"]
    assert not MessengerConnection.objects.exists()


def test_a_failed_registration_keeps_the_credential_and_verify_retries(api, tg, paid):
    tg.fail_set_webhook = True
    body = put(api).json()
    assert body["webhook"]["attempted"] is True and body["webhook"]["status"] == "failed"
    assert "resolve host" in body["webhook"]["detail"]
    conn = MessengerConnection.objects.get()
    assert conn.inbound_live is False and body["has_token"] is True
    tg.fail_set_webhook = False
    verified = api(scopes=["messengers:write"]).post(f"{TG}/verify", **idem())
    assert verified.status_code == 200 and verified.json()["webhook"] == {"attempted": True, "status": "registered"}
    conn.refresh_from_db()
    assert conn.inbound_live is True


@pytest.mark.parametrize(
    "payload, field",
    [
        ({"token": "nope"}, "token"),
        ({"token": 5}, "token"),
        ({}, "token"),
        ({"token": TOKEN, "url": "https://x"}, "url"),
    ],
)
def test_put_validation_is_strict(api, tg, paid, payload, field):
    response = api(scopes=["messengers:write"]).put(TG, payload, format="json", **idem())
    assert field in assert_problem(response, 422)["errors"]
    assert tg.calls == [] and not MessengerConnection.objects.exists()


def test_vk_and_custom_are_not_writable(api, paid):
    for provider in ("vk", "custom"):
        response = api(scopes=["messengers:write"]).put(
            f"/api/v1/messengers/{provider}", {"token": TOKEN}, format="json", **idem()
        )
        assert_problem(response, 422, "not_writable")


def test_connecting_and_verifying_need_a_paid_plan_removing_does_not(api, tg):
    assert_problem(put(api), 409, "plan_required")
    assert_problem(api(scopes=["messengers:write"]).post(f"{TG}/verify", **idem()), 409, "plan_required")
    assert tg.calls == []
    assert api(scopes=["messengers:write"]).delete(TG).status_code == 204


def test_verify_with_nothing_stored_is_409(api, tg, paid):
    assert_problem(api(scopes=["messengers:write"]).post(f"{TG}/verify", **idem()), 409, "not_connected")


def test_ten_provider_calls_per_minute_per_widget(api, tg, paid):
    for _ in range(10):
        assert put(api).status_code == 200
    calls = len(tg.calls)
    response = put(api)
    assert_problem(response, 429)
    assert "Retry-After" in response and len(tg.calls) == calls


def test_write_scope_and_idempotency_key(api, tg, paid):
    assert_problem(api(scopes=["messengers:read"]).put(TG, {"token": TOKEN}, format="json", **idem()), 403)
    response = api(scopes=["messengers:write"]).put(TG, {"token": TOKEN}, format="json")
    assert_problem(response, 400, "idempotency_key_missing")


def test_writes_purge_the_widget_cache(api, widget, tg, paid, monkeypatch):
    from apps.core import events

    seen = []
    original = events.emit
    monkeypatch.setattr(events, "emit", lambda w, t, **kw: (seen.append(t), original(w, t, **kw))[1])
    put(api)
    api(scopes=["messengers:write"]).delete(TG)
    assert seen.count(events.WIDGET_CONFIG_CHANGED) == 2


# --- DELETE ---------------------------------------------------------------------------------------


def test_delete_unregisters_first_then_forgets(api, tg, paid):
    connect(api, tg)
    assert api(scopes=["messengers:write"]).delete(TG).status_code == 204
    assert tg.methods()[-1] == "deleteWebhook"
    assert not MessengerConnection.objects.exists()


def test_delete_is_not_blocked_by_the_provider(api, tg, paid, settings):
    connect(api, tg)
    settings.PROVIDER_API_BASE_TG = "https://127.0.0.1:9"  # nothing listens there
    assert api(scopes=["messengers:write"]).delete(TG).status_code == 204
    assert not MessengerConnection.objects.exists()


def test_delete_custom_deactivates_every_custom_channel(api, widget):
    from apps.channels.models import CustomChannel

    CustomChannel.objects.create(widget=widget, name="a", url="https://127.0.0.1/a")
    CustomChannel.objects.create(widget=widget, name="b", url="https://127.0.0.1/b")
    rows = api(scopes=["messengers:read"]).get("/api/v1/messengers/custom").json()
    assert rows["connected"] is True
    assert api(scopes=["messengers:write"]).delete("/api/v1/messengers/custom").status_code == 204
    assert not CustomChannel.objects.filter(is_active=True).exists()


# --- inbound --------------------------------------------------------------------------------------


def update(update_id=1000, text="Hello", user=42):
    return {
        "update_id": update_id,
        "message": {
            "message_id": 7,
            "from": {"id": user, "is_bot": False, "first_name": "Ivan", "last_name": "Petrov"},
            "chat": {"id": user, "type": "private"},
            "date": 1700000000,
            "text": text,
        },
    }


def hook(client, conn, body, secret=None):
    secret = crypto.decrypt_secret(conn.hook_secret_encrypted) if secret is None else secret
    return client.post(
        f"/api/hooks/tg/{conn.hook_id}/",
        data=json.dumps(body),
        content_type="application/json",
        HTTP_X_TELEGRAM_BOT_API_SECRET_TOKEN=secret,
    )


def test_an_update_creates_the_contact_and_the_tg_chat_once(client, api, widget, tg, paid):
    conn = connect(api, tg)
    assert hook(client, conn, update()).status_code == 200
    assert hook(client, conn, update()).status_code == 200  # redelivered
    chat = Chat.objects.get(widget=widget)
    assert chat.channel == "tg" and chat.contact.name == "Ivan Petrov"
    assert list(chat.messages.values_list("body", flat=True)) == ["Hello"]
    assert hook(client, conn, update(update_id=1001, text="again")).status_code == 200
    assert chat.messages.count() == 2 and InboundUpdate.objects.count() == 2


def test_a_forged_secret_is_refused_and_stores_nothing(client, api, tg, paid):
    conn = connect(api, tg)
    assert_problem(hook(client, conn, update(), secret="forged"), 401, "invalid_signature")
    assert_problem(hook(client, conn, update(), secret=""), 401)
    assert not Chat.objects.exists() and not InboundUpdate.objects.exists()


def test_an_unknown_hook_is_404(client):
    response = client.post("/api/hooks/tg/nope/", data="{}", content_type="application/json")
    assert_problem(response, 404)


def test_updates_without_text_are_acknowledged(client, api, tg, paid):
    conn = connect(api, tg)
    sticker = update()
    del sticker["message"]["text"]
    assert hook(client, conn, sticker).status_code == 200
    assert hook(client, conn, {"update_id": 5, "edited_message": {}}).status_code == 200
    assert not Chat.objects.exists()
    assert_problem(hook(client, conn, {"update_id": "x"}), 422)


# --- outbound -------------------------------------------------------------------------------------


def test_an_operator_keyboard_message_reaches_telegram_as_an_inline_keyboard(client, api, widget, tg, paid):
    conn = connect(api, tg)
    hook(client, conn, update())
    chat = Chat.objects.get()
    keyboard = {
        "buttons": [
            {"label": "Track", "url": "https://example.com/t", "style": "primary"},
            {"label": "Help", "url": "https://example.com/h", "style": "secondary"},
        ]
    }
    agent = AgentFactory(widget=widget)
    chat_services.post_agent_message(
        widget=widget,
        chat=chat,
        agent=agent,
        data=chat_services.MessageInput(type=Message.Type.KEYBOARD, body="Pick", keyboard=keyboard),
    )
    assert engine.deliver_due(concurrency=1, max_seconds=10) == 1
    sent = [c for c in tg.calls if c.method == "sendMessage"]
    assert sent[0].token == TOKEN
    assert sent[0].body == {
        "chat_id": "42",
        "text": "Pick",
        "reply_markup": {
            "inline_keyboard": [
                [{"text": "Track", "url": "https://example.com/t"}],
                [{"text": "Help", "url": "https://example.com/h"}],
            ]
        },
    }
    row = Delivery.objects.get(endpoint__owner="messenger:tg")
    assert row.status == "delivered" and TOKEN not in row.body


def test_a_429_waits_its_retry_after_and_a_refusal_is_final(client, api, widget, tg, paid, triggers):
    conn = connect(api, tg)
    hook(client, conn, update())
    chat = Chat.objects.get()
    agent = AgentFactory(widget=widget)
    tg.throttle_sends, tg.retry_after = 1, 45
    message = chat_services.post_agent_message(
        widget=widget, chat=chat, agent=agent, data=chat_services.MessageInput(body="Hi")
    )
    row = Delivery.objects.get(message=message)
    assert engine.attempt_delivery(row.pk) == "pending"
    assert triggers[-1] == 45  # Telegram's retry_after, longer than the webhook wait of 10 s
    row.refresh_from_db()
    assert row.last_status_code == 429
    second = chat_services.post_agent_message(
        widget=widget, chat=chat, agent=agent, data=chat_services.MessageInput(body="Again")
    )
    tg.fail_sends, tg.throttle_sends = True, 0
    other = Delivery.objects.get(message=second)
    assert engine.attempt_delivery(other.pk) == "failed"  # a 400 from Telegram will not change


def test_key_rotation_reaches_the_stored_token(api, tg, paid, settings):
    from cryptography.fernet import Fernet

    from apps.channels.services import rotate_custom_channel_keys

    first = Fernet.generate_key().decode()
    settings.WEBHOOK_SECRET_KEYS = [first]
    conn = connect(api, tg)
    before = conn.token_encrypted
    settings.WEBHOOK_SECRET_KEYS = [Fernet.generate_key().decode(), first]
    assert rotate_custom_channel_keys() == 1
    conn.refresh_from_db()
    assert conn.token_encrypted != before and crypto.decrypt_secret(conn.token_encrypted) == TOKEN
    settings.WEBHOOK_SECRET_KEYS = settings.WEBHOOK_SECRET_KEYS[:1]  # the old key dropped
    assert crypto.decrypt_secret(conn.hook_secret_encrypted) is not None


# --- long-poll mode -------------------------------------------------------------------------------


def test_long_poll_mode_deletes_the_webhook_checks_the_bot_and_polls_updates(api, widget, tg, paid, settings):
    # given a deployment with no public address
    settings.TELEGRAM_LONG_POLL = True
    tg.webhook_set = True  # a webhook left from an earlier deployment
    response = put(api)
    # then PUT deletes the webhook and checks the identity instead of registering one
    assert response.status_code == 200, response.content
    assert response.json()["webhook"]["status"] == "registered"
    assert tg.methods() == ["getMe", "deleteWebhook", "getMe"]
    conn = MessengerConnection.objects.get(widget=widget, provider="tg")
    assert conn.inbound_live is True and tg.webhook_set is False

    # when updates wait at Telegram (one without text, one redelivered later)
    tg.pending_updates = [update(1000), update(1001, text="second"), {"update_id": 1002, "edited_message": {}}]
    assert messengers.poll_all_telegram() == 3
    # then they become the visitor's messages, and the offset confirms them
    chat = Chat.objects.get(widget=widget, channel="tg")
    assert list(chat.messages.order_by("pk").values_list("body", flat=True)) == ["Hello", "second"]
    conn.refresh_from_db()
    assert conn.poll_offset == 1003
    assert tg.calls[-1].body["offset"] == 0  # the first poll takes whatever waits

    # and the next poll asks from the new offset; an update seen before stores nothing twice
    tg.pending_updates = [update(1001, text="second"), update(1003, text="third")]
    assert messengers.poll_all_telegram() == 1
    assert tg.calls[-1].body["offset"] == 1003
    assert list(chat.messages.order_by("pk").values_list("body", flat=True)) == ["Hello", "second", "third"]


def test_polled_updates_of_the_wrong_shape_store_nothing_and_are_passed(api, widget, tg, paid, settings):
    settings.TELEGRAM_LONG_POLL = True
    conn = connect(api, tg)
    nul, number, chat_text, no_message = update(1000, text="Hi\u0000"), update(1001), update(1002), update(1003)
    number["message"]["text"] = 7
    chat_text["message"]["chat"] = {"id": "forty-two"}
    no_message["message"] = None
    beyond = update(2**63)  # an id whose next offset no bigint holds
    tg.pending_updates = [nul, number, chat_text, no_message, beyond, {"update_id": True}]
    assert messengers.poll_all_telegram() == 4
    conn.refresh_from_db()
    assert conn.poll_offset == 1004 and not Chat.objects.filter(widget=widget).exists()


def test_without_long_poll_mode_nothing_polls(api, tg, paid):
    connect(api, tg)
    tg.pending_updates = [update(1000)]
    assert messengers.poll_all_telegram() == 0
    assert "getUpdates" not in tg.methods()


def test_a_failed_poll_keeps_the_offset(api, widget, tg, paid, settings):
    settings.TELEGRAM_LONG_POLL = True
    conn = connect(api, tg)
    tg.webhook_set = True  # someone set a webhook behind our back: Telegram refuses getUpdates
    tg.pending_updates = [update(1000)]
    assert messengers.poll_all_telegram() == 0
    conn.refresh_from_db()
    assert conn.poll_offset == 0 and not Chat.objects.filter(widget=widget).exists()


def test_a_bot_api_call_logs_no_bot_token(tg, settings, caplog):
    # given the Bot API unreachable (a loopback port nobody listens on), outbound logging on
    settings.PROVIDER_API_BASE_TG = "https://127.0.0.1:9"
    caplog.set_level(logging.DEBUG, logger="apps.platform.outbound")

    # when a call fails
    assert telegram.call(TOKEN, "getMe").ok is False

    # then the failure is logged with the bot's id and never its secret
    lines = [JSONFormatter().format(record) for record in caplog.records]
    assert any("/bot123456789:[redacted]/getMe" in line for line in lines), lines
    assert not [line for line in lines if TOKEN.split(":")[1] in line]
