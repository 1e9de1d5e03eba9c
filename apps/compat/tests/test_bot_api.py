"""The legacy Bot API: the CLIENT_MESSAGE posts (deliveries of the webhook engine: 3 s, 2 retries,
then a person), the bot's calls at /api/compat/legacy/bot/{token}, path tokens, and what is
refused."""

from __future__ import annotations

import json

import pytest
from django.utils import timezone

from apps.agents import selectors as agent_selectors
from apps.agents.models import Agent
from apps.chats import services as chat_services
from apps.chats.models import Chat, Message
from apps.compat import services
from apps.compat.models import ClientMessage, CompatBot, CompatBotHandoff
from apps.core import crypto
from apps.webhooks import services as webhooks
from apps.webhooks.models import Delivery
from apps.webhooks.tests.receiver import Reply
from tests.support.factories import AgentFactory
from tests.support.plugin import assert_problem

pytestmark = pytest.mark.django_db


@pytest.fixture
def bot_and_token(widget, receiver):
    return services.create_compat_bot(widget=widget, url=receiver.url("/bot"))


@pytest.fixture
def bot(bot_and_token) -> CompatBot:
    return bot_and_token[0]


@pytest.fixture
def token(bot_and_token) -> str:
    return bot_and_token[1]


def visitor_writes(widget, text="Hi", contact=None) -> Message:
    contact = contact or chat_services.create_contact(widget=widget)
    return chat_services.post_client_message(widget=widget, contact=contact, data=chat_services.MessageInput(body=text))


def send_until_settled(attempts: int = 5) -> None:
    """Run the engine inline until no CLIENT_MESSAGE is pending, each retry made due at once (its
    wait is what the recorded triggers show)."""
    for _ in range(attempts):
        pending = Delivery.objects.filter(status=Delivery.Status.PENDING)
        if not pending.exists():
            return
        pending.update(next_attempt_at=timezone.now())
        webhooks.deliver_due(concurrency=1, max_seconds=10)


def call(client, token, body, raw=False):
    data = body if raw else json.dumps(body)
    return client.post(f"/api/compat/legacy/bot/{token}", data=data, content_type="application/json")


# --- CLIENT_MESSAGE ------------------------------------------------------------------------------


def test_a_visitor_message_is_posted_to_the_bot_as_client_message(
    widget, bot_and_token, receiver, triggers, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        message = visitor_writes(widget, "Can you help me?")
    assert triggers == [None]  # the engine is asked for a run once the message commits
    send_until_settled()
    hit = receiver.wait_for(1)[0]
    body = hit.json()
    # signed like our webhooks, with the bot's own signing secret
    secret = bot_and_token[2]
    assert hit.header("x-service-signature") == webhooks.service_signature(secret, hit.body)
    ts = int(hit.header("webhook-timestamp"))
    assert hit.header("webhook-id") == body["id"] == hit.header("x-service-idempotency-key")
    assert hit.header("webhook-signature") == webhooks.standard_signature(secret, body["id"], ts, hit.body)
    assert hit.header("x-service-event") == "CLIENT_MESSAGE"
    assert hit.header("user-agent") == "ChatWidgetService-Compat/1"
    assert hit.header("content-type") == "application/json; charset=utf-8"
    assert hit.header("x-service-signature") != webhooks.service_signature("whsec_other", hit.body)
    assert body["event"] == "CLIENT_MESSAGE"
    assert body["chat_id"] == str(message.chat_id) and isinstance(body["chat_id"], str)
    assert body["client_id"] == message.chat.contact.guid
    assert body["site_id"] == str(widget.pk) and body["agents_online"] is False
    assert body["message"] == {"type": "TEXT", "text": "Can you help me?", "timestamp": body["message"]["timestamp"]}
    assert isinstance(body["message"]["timestamp"], int)
    assert body["channel"] == {"id": widget.button_guid, "type": "widget"}
    sent = ClientMessage.objects.select_related("delivery").get()
    assert (sent.chat_id, sent.message_id, sent.bot_id) == (message.chat_id, message.pk, bot_and_token[0].pk)
    assert (sent.delivery.status, sent.delivery.attempts) == ("delivered", 1)
    assert sent.delivery.endpoint_id == bot_and_token[0].endpoint_id
    assert str(sent.delivery.key) == body["id"]


def test_three_failed_attempts_hand_the_chat_to_a_person(
    widget, bot, receiver, triggers, monkeypatch, django_capture_on_commit_callbacks
):
    human = AgentFactory(widget=widget)
    monkeypatch.setattr(agent_selectors, "PRESENCE_SOURCE", lambda w: {human.pk})
    receiver.rule = lambda hit: Reply(status=500)
    with django_capture_on_commit_callbacks(execute=True):
        message = visitor_writes(widget)
    with django_capture_on_commit_callbacks(execute=True):
        send_until_settled()
    assert len(receiver.wait_for(3)) == 3
    # the same CLIENT_MESSAGE each time: one idempotency key, the bot's short waits between
    assert len({hit.header("x-service-idempotency-key") for hit in receiver.snapshot()}) == 1
    assert triggers == [None, 0.5, 1.0]
    delivery = ClientMessage.objects.get().delivery
    assert (delivery.status, delivery.attempts, delivery.last_error) == ("failed", 3, "http_500")
    assert delivery.attempt_rows.count() == 3
    chat = Chat.objects.get(pk=message.chat_id)
    assert chat.agent_id == human.pk
    assert CompatBotHandoff.objects.get(chat=chat).reason == "bot_unreachable"
    with django_capture_on_commit_callbacks(execute=True):
        visitor_writes(widget, "again", contact=chat.contact)
    assert ClientMessage.objects.count() == 1  # the bot no longer serves the chat
    assert len(receiver.snapshot()) == 3


def test_a_slow_bot_times_out_after_3_seconds(widget, bot, receiver, triggers, django_capture_on_commit_callbacks):
    import time

    receiver.rule = lambda hit: Reply(status=200, delay=3.6) if hit.key_attempt == 1 else 200
    with django_capture_on_commit_callbacks(execute=True):
        visitor_writes(widget)
    started = time.monotonic()
    send_until_settled()
    assert time.monotonic() - started < 6
    delivery = ClientMessage.objects.get().delivery
    assert (delivery.status, delivery.attempts) == ("delivered", 2)
    assert delivery.attempt_rows.order_by("number").first().error in {"timeout", "deadline_exceeded"}


def test_chats_a_person_handles_and_operator_messages_go_to_no_bot(
    widget, bot, triggers, django_capture_on_commit_callbacks
):
    human = AgentFactory(widget=widget)
    first = visitor_writes(widget)
    chat_services.post_agent_message(
        widget=widget, chat=first.chat, agent=human, data=chat_services.MessageInput(body="I am here")
    )
    ClientMessage.objects.all().delete()
    visitor_writes(widget, "thanks", contact=first.chat.contact)
    assert not ClientMessage.objects.exists()


def test_a_bot_url_changed_in_the_admin_takes_the_next_attempt(
    widget, bot, receiver, triggers, admin_client, django_capture_on_commit_callbacks
):
    receiver.rule = lambda hit: Reply(status=503) if hit.path == "/bot" else 200
    with django_capture_on_commit_callbacks(execute=True):
        visitor_writes(widget)
    webhooks.deliver_due(concurrency=1, max_seconds=10)
    page = admin_client.post(
        f"/admin/compat/compatbot/{bot.pk}/change/", {"url": receiver.url("/moved"), "is_active": "on"}
    )
    assert page.status_code == 302
    send_until_settled()
    assert [hit.path for hit in receiver.snapshot()] == ["/bot", "/moved"]
    assert ClientMessage.objects.get().delivery.status == "delivered"


def test_erasing_the_message_erases_its_client_message(widget, bot, triggers, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        message = visitor_writes(widget, "my card is 4111 1111 1111 1111")
    assert Delivery.objects.filter(message=message).count() == 1
    Message.objects.filter(pk=message.pk).delete()
    assert not Delivery.objects.filter(event_type="CLIENT_MESSAGE").exists()
    assert not ClientMessage.objects.exists()


# --- the bot's calls -----------------------------------------------------------------------------


def test_bot_message_text_is_written_as_the_bot_operator(client, widget, bot, token, captured_events):
    chat = visitor_writes(widget).chat
    response = call(
        client, token, {"event": "BOT_MESSAGE", "chat_id": str(chat.pk), "message": {"type": "TEXT", "text": "Hello"}}
    )
    assert response.status_code == 200, response.content
    message = Message.objects.get(pk=response.json()["message_id"])
    assert (message.body, message.agent_id, message.chat_id) == ("Hello", bot.agent_id, chat.pk)
    assert message.author_kind == Message.Author.AI
    assert ("message.created", "compat") in [(t, d.get("source")) for t, d in captured_events()]


def test_chat_id_as_a_number_and_message_type_instead_of_event(client, widget, token):
    chat = visitor_writes(widget).chat
    body = {"message_type": "BOT_MESSAGE", "chat_id": chat.pk, "message": {"type": "TEXT", "text": "x"}}
    assert call(client, token, body).status_code == 200


def test_markdown_and_link_buttons(client, widget, token):
    chat = visitor_writes(widget).chat
    md = call(
        client,
        token,
        {
            "event": "BOT_MESSAGE",
            "chat_id": str(chat.pk),
            "message": {"type": "MARKDOWN", "text": "**b**", "timestamp": 1665415881000},
        },
    )
    message = Message.objects.get(pk=md.json()["message_id"])
    assert (message.body, message.markdown) == ("**b**", "**b**")
    buttons = [{"text": "Track", "url": "https://example.com/t"}, {"text": "Pay", "url": "https://example.com/p"}]
    kb = call(
        client,
        token,
        {
            "event": "BOT_MESSAGE",
            "chat_id": str(chat.pk),
            "message": {"type": "BUTTONS", "text": "Pick", "buttons": buttons},
        },
    )
    message = Message.objects.get(pk=kb.json()["message_id"])
    assert message.type == Message.Type.KEYBOARD and message.body == "Pick"
    assert message.keyboard == {
        "buttons": [
            {"label": "Track", "url": "https://example.com/t", "style": "primary"},
            {"label": "Pay", "url": "https://example.com/p", "style": "primary"},
        ]
    }


def test_invite_agent_with_nobody_online_is_an_informational_200(client, widget, bot, token):
    chat = visitor_writes(widget).chat
    response = call(client, token, {"event": "INVITE_AGENT", "chat_id": str(chat.pk)})
    assert response.status_code == 200 and response.json() == {"status": "no_agents_online"}
    assert not CompatBotHandoff.objects.exists()


def test_invite_agent_hands_the_chat_to_a_random_online_person(
    client, widget, bot, token, monkeypatch, captured_events
):
    humans = [AgentFactory(widget=widget) for _ in range(2)]
    offline = AgentFactory(widget=widget)
    monkeypatch.setattr(agent_selectors, "PRESENCE_SOURCE", lambda w: {h.pk for h in humans} | {bot.agent_id})
    chat = visitor_writes(widget).chat
    response = call(client, token, {"event": "INVITE_AGENT", "chat_id": str(chat.pk)})
    body = response.json()
    assert body["status"] == "agent_invited" and body["agent_id"] in {h.pk for h in humans}
    assert body["agent_id"] != offline.pk
    assert Chat.objects.get(pk=chat.pk).agent_id == body["agent_id"]
    assert "chat.transferred" in [t for t, _ in captured_events()]
    again = call(
        client, token, {"event": "BOT_MESSAGE", "chat_id": str(chat.pk), "message": {"type": "TEXT", "text": "x"}}
    )
    assert_problem(again, 403, "chat_not_served")


def test_init_rate_asks_for_a_rating(client, widget, token):
    chat = visitor_writes(widget).chat
    response = call(client, token, {"event": "INIT_RATE", "chat_id": str(chat.pk)})
    assert response.status_code == 200 and response.json()["status"] == "rating_requested"
    assert Message.objects.filter(chat=chat, author_kind=Message.Author.SYSTEM).exists()


def test_unknown_token_is_401_and_a_near_miss_too(client, widget, token):
    chat = visitor_writes(widget).chat
    body = {"event": "INIT_RATE", "chat_id": str(chat.pk)}
    assert_problem(call(client, "0" * 48, body), 401)
    assert_problem(call(client, token[:-1] + ("0" if token[-1] != "0" else "1"), body), 401)
    assert_problem(call(client, "short", body), 401)


def test_disabled_bot_is_403(client, widget, bot, token):
    chat = visitor_writes(widget).chat
    CompatBot.objects.filter(pk=bot.pk).update(is_active=False)
    assert_problem(call(client, token, {"event": "INIT_RATE", "chat_id": str(chat.pk)}), 403, "bot_disabled")


def test_foreign_and_missing_chats_are_the_same_404(client, widget, other_widget, token):
    foreign = visitor_writes(other_widget).chat
    for chat_id in (str(foreign.pk), "999999", "99999999999999999999999"):
        response = call(client, token, {"event": "INIT_RATE", "chat_id": chat_id})
        assert_problem(response, 404, "not_found")


@pytest.mark.parametrize(
    "raw",
    [
        "not json",
        "[1, 2]",
        '{"event": "BOT_MESSAGE"}',
        '{"event": "CLIENT_INFO", "chat_id": "1"}',
        '{"event": "BOT_MESSAGE", "chat_id": "1"}',
        '{"event": "BOT_MESSAGE", "chat_id": "1", "message": {"type": "TEXT", "text": ""}}',
        '{"event": "BOT_MESSAGE", "chat_id": "1", "message": {"type": "VIDEO", "text": "x"}}',
        '{"event": "BOT_MESSAGE", "chat_id": "abc", "message": {"type": "TEXT", "text": "x"}}',
        '{"event": "BOT_MESSAGE", "chat_id": true, "message": {"type": "TEXT", "text": "x"}}',
        '{"event": "BOT_MESSAGE", "chat_id": "1", "message": {"type": "TEXT", "text": "x", "timestamp": "soon"}}',
        '{"event": "BOT_MESSAGE", "chat_id": "1", "message": {"type": "BUTTONS", "text": "x"}}',
        '{"event": "BOT_MESSAGE", "chat_id": "1", "message": {"type": "BUTTONS", "text": "x", "buttons": [{"text": "a", "url": "http://x.y"}]}}',
        '{"event": "INIT_RATE", "message_type": "INVITE_AGENT", "chat_id": "1"}',
        '{"event": "BOT_MESSAGE", "chat_id": "1", "message": {"type": "MARKDOWN", "content": "\\ud800"}}',
        '{"event": "BOT_MESSAGE", "chat_id": "1", "message": {"type": "MARKDOWN", "content": {"text": "a\\u0000"}}}',
        '{"event": "BOT_MESSAGE", "chat_id": "1", "message": {"type": "BUTTONS", "text": "x", "buttons": [{"text": "a", "url": "https://[::1"}]}}',
        '{"event": "BOT_MESSAGE", "chat_id": "1", "message": {"type": "BUTTONS", "text": "x", "buttons": [{"text": "a", "url": "https://a.example/x y"}]}}',
    ],
)
def test_malformed_bodies_are_422_and_change_nothing(client, widget, token, raw):
    chat = visitor_writes(widget).chat
    before = Message.objects.count()
    assert_problem(call(client, token, raw.replace('"1"', f'"{chat.pk}"'), raw=True), 422)
    assert Message.objects.count() == before


def test_create_compat_bot_command(widget, receiver):
    from io import StringIO

    from django.core.management import call_command

    out = StringIO()
    call_command("create_compat_bot", "--widget", str(widget.pk), "--url", receiver.url("/b"), stdout=out)
    printed = json.loads(out.getvalue())
    assert set(printed) == {"bot_token", "agent_id", "signing_secret"}
    bot = CompatBot.objects.get(agent_id=printed["agent_id"])
    assert printed["bot_token"] not in bot.token_hash and bot.agent.type == Agent.Type.AI
    assert printed["signing_secret"] not in bot.endpoint.secret_encrypted
    assert (bot.endpoint.owner, bot.endpoint.owner_id, bot.endpoint.url) == ("compat_bot", bot.pk, bot.url)
    assert crypto.decrypt_secret(bot.endpoint.secret_encrypted) == printed["signing_secret"]
    out = StringIO()
    call_command("reset_compat_bot_secret", "--bot", str(bot.pk), stdout=out)
    reset = json.loads(out.getvalue())
    assert reset["bot_id"] == bot.pk and reset["signing_secret"] != printed["signing_secret"]
    bot.endpoint.refresh_from_db()
    assert crypto.decrypt_secret(bot.endpoint.secret_encrypted) == reset["signing_secret"]
    assert bot.endpoint.previous_secret_encrypted == ""  # the old secret stops at once


def test_rotate_webhook_keys_re_encrypts_the_bots_signing_secrets(widget, receiver, settings):
    from io import StringIO

    from cryptography.fernet import Fernet
    from django.core.management import call_command

    first = Fernet.generate_key().decode()
    settings.WEBHOOK_SECRET_KEYS = [first]
    bot, _, secret = services.create_compat_bot(widget=widget, url=receiver.url("/bot"))
    before = bot.endpoint.secret_encrypted
    settings.WEBHOOK_SECRET_KEYS = [Fernet.generate_key().decode(), first]
    out = StringIO()
    call_command("rotate_webhook_keys", stdout=out)
    assert json.loads(out.getvalue()) == {"rotated": 1}
    bot.endpoint.refresh_from_db()
    assert bot.endpoint.secret_encrypted != before
    settings.WEBHOOK_SECRET_KEYS = settings.WEBHOOK_SECRET_KEYS[:1]  # the old key dropped
    assert crypto.decrypt_secret(bot.endpoint.secret_encrypted) == secret
