"""Replies: the eight reply rules of endpoints.md (rule 8 belongs to account-link), the limits
with a frozen clock, and the audit of every reply, refused ones included."""

from __future__ import annotations

import hashlib
from datetime import timedelta

import pytest
import time_machine
from django.conf import settings
from django.utils import timezone

from apps.chats import services as chat_services
from apps.chats.models import Chat, Message
from apps.support.models import SUPPORT_REPLY_ORIGIN, SupportAction, SupportConfig, Ticket
from tests.support.plugin import assert_problem


def sent(chat):
    return Message.objects.filter(chat=chat, origin=SUPPORT_REPLY_ORIGIN)


# --- rule 1: sender, delivery, channels ----------------------------------------------------------------


def test_a_reply_is_stored_as_the_support_operator_like_a_console_reply(support, captured_events):
    chat = support.chat()
    response = support.reply(chat, "Hello, your order ships tomorrow.")
    assert response.status_code == 201, response.content
    body = response.json()
    message = Message.objects.get(pk=body["message_id"])
    assert message.agent_id == support.operator.pk and message.author_kind == "agent"
    assert message.body == "Hello, your order ships tomorrow." and message.origin == SUPPORT_REPLY_ORIGIN
    assert body["status"] == "stored" and body["delivery"] == "widget_on_return"
    assert body["chat"]["account"]["link"] == "anonymous"
    chat.refresh_from_db()
    assert chat.last_message_id == message.pk and chat.accepted_by_id == support.operator.pk
    created = [d for t, d in captured_events() if t == "message.created"]
    assert created and created[-1]["message_id"] == message.pk and created[-1]["author_type"] == "OPERATOR"
    # read back through the support API as a support message
    messages = support.client.get(f"/api/v1/support/chats/{chat.pk}/messages").json()["data"]
    assert messages[-1]["sender"]["kind"] == "support" and messages[-1]["via_support_api"] is True


def test_a_messenger_chat_is_delivered_at_once(support):
    chat = support.chat(channel="tg")
    assert support.reply(chat, "Hi").json()["delivery"] == "messenger"


def test_an_expired_chat_reopens_as_with_an_operator_reply(support):
    chat = support.chat()
    chat_services.close_chat(widget=support.widget, chat=chat)
    assert support.reply(chat, "We are back").status_code == 201
    chat.refresh_from_db()
    assert chat.status == Chat.Status.ACTIVE


@pytest.mark.parametrize("channel", ["vk", "wa", "ch5", "app"])
def test_other_channels_are_409_channel_unsupported(support, channel):
    chat = support.chat(channel=channel)
    assert_problem(support.reply(chat, "Hi"), 409, "channel_unsupported")
    assert not sent(chat).exists()


def test_app_tickets_once_enabled(support):
    support.configure(channels=["widget", "tg", "app"])
    chat = support.chat(channel="app")
    assert support.reply(chat, "Hi").status_code == 201


def test_spam_or_clientless_chat_is_409_chat_unavailable(support):
    spam = support.chat()
    Chat.objects.filter(pk=spam.pk).update(status="spam")
    assert_problem(support.reply(spam, "Hi"), 409, "chat_unavailable")
    contact = chat_services.create_contact(widget=support.widget)
    empty = chat_services.get_or_create_room(widget=support.widget, contact=contact, source="test")
    assert_problem(support.reply(empty, "Hi"), 409, "chat_unavailable")


# --- rule 2: text --------------------------------------------------------------------------------------


def test_the_normalised_text_is_what_is_checked_sent_and_stored(support):
    chat = support.chat()
    raw = "Hello\u00a0there,\r\nyour\u200b order\u2003ships."
    body = support.reply(chat, raw).json()
    assert body["text"] == "Hello there,\nyour order ships."
    assert Message.objects.get(pk=body["message_id"]).body == "Hello there,\nyour order ships."
    row = SupportAction.objects.get(pk=body["action_id"])
    expected = "Hello there,\nyour order ships."
    assert row.text_sha256 == hashlib.sha256(expected.encode()).hexdigest() and row.text_length == len(expected)


@pytest.mark.parametrize(
    "text,code",
    [
        ("a\tb", "forbidden_whitespace"),
        ("a\fb", "forbidden_whitespace"),
        ("a\x85b", "forbidden_whitespace"),
        ("a\u2028b", "forbidden_whitespace"),
        ("a\u2029b", "forbidden_whitespace"),
        ("", "invalid_text"),
        ("\u200b\u200b", "invalid_text"),
        ("x" * 3501, "invalid_text"),
        ("a\x00b", "invalid_text"),
        ("a\u202eb", "invalid_text"),
        ('{"reply": "x"}', "invalid_text"),
        ("<b>hi</b>", "invalid_text"),
        ("[here](https://shop.ru/)", "invalid_text"),
        ("[KEY_TO_OPERATOR]", "invalid_text"),
    ],
)
def test_text_rules_refuse_and_send_nothing(support, text, code):
    chat = support.chat()
    body = assert_problem(support.reply(chat, text), 422, code)
    assert body["reason"] == code
    assert not sent(chat).exists()


def test_3500_characters_after_normalisation_pass(support):
    chat = support.chat()
    assert support.reply(chat, "x" * 3500 + "\u200b" * 50).status_code == 201


def test_text_must_be_a_string_and_known_keys_only(support):
    chat = support.chat()
    chat.refresh_from_db()
    for body in (
        {"text": 5, "expected_last_message_id": chat.last_message_id},
        {"text": "hi", "expected_last_message_id": chat.last_message_id, "html": True},
        {"text": "hi"},
        {"text": "hi", "expected_last_message_id": chat.last_message_id, "close_ticket": "false"},
    ):
        assert_problem(support.post(f"/api/v1/support/chats/{chat.pk}/reply", body), 422)
    assert not sent(chat).exists()


# --- rule 3: links -------------------------------------------------------------------------------------


def test_an_unofficial_link_is_422_with_offending_and_allowed(support):
    chat = support.chat()
    body = assert_problem(support.reply(chat, "Pay at https://evil.com/pay or shop.ru/help"), 422, "link_not_allowed")
    assert body["offending"] == [{"token": "https://evil.com/pay", "kind": "url", "view": "https://evil.com/pay"}]
    assert "https://shop.ru/" in body["allowed"] and "@shop_bot" in body["allowed"]
    assert not sent(chat).exists()


def test_official_links_pass(support):
    chat = support.chat()
    text = (
        "See https://shop.ru/help, магазин.рф/заказы, https://docs.partner.com/guide?id=7, "
        "https://apps.apple.com/app/id123456789, 203.0.113.10, t.me/shop_bot, @shop_bot or help@shop.ru."
    )
    assert support.reply(chat, text).status_code == 201, support.reply(chat, text).content


def test_the_customers_own_addresses_from_this_chat_pass(support):
    chat = support.chat(email="Client@Mail.ru")
    chat_services.post_client_message(
        widget=support.widget, contact=chat.contact, data=chat_services.MessageInput(body="or second@yandex.ru")
    )
    assert support.reply(chat, "We wrote to client@mail.ru and second@yandex.ru").status_code == 201
    other = support.chat()
    assert_problem(support.reply(other, "We wrote to second@yandex.ru"), 422, "link_not_allowed")


# --- rules 4 and 5 -------------------------------------------------------------------------------------


def test_a_newer_message_is_409_chat_changed(support):
    chat = support.chat()
    chat.refresh_from_db()
    seen = chat.last_message_id
    chat_services.post_client_message(
        widget=support.widget, contact=chat.contact, data=chat_services.MessageInput(body="one more thing")
    )
    response = support.post(f"/api/v1/support/chats/{chat.pk}/reply", {"text": "Hi", "expected_last_message_id": seen})
    body = assert_problem(response, 409, "chat_changed")
    chat.refresh_from_db()
    assert body["last_message_id"] == chat.last_message_id
    assert not sent(chat).exists()


def test_a_store_not_seen_within_5_seconds_is_202_and_confirmed_by_the_action(support, monkeypatch):
    from apps.support.api import views

    monkeypatch.setattr(views, "STORE_CONFIRM_SECONDS", -1.0)
    chat = support.chat()
    response = support.reply(chat, "Slow")
    assert response.status_code == 202
    body = response.json()
    assert body["status"] == "pending"
    assert SupportAction.objects.get(pk=body["action_id"]).outcome == "pending"
    action = support.client.get(f"/api/v1/support/actions/{body['action_id']}").json()
    assert action["outcome"] == "ok" and action["message_id"] == body["message_id"]


def test_a_repeated_reply_key_is_409_never_a_second_send(support):
    chat = support.chat()
    chat.refresh_from_db()
    body = {"text": "Once", "expected_last_message_id": chat.last_message_id}
    assert support.post(f"/api/v1/support/chats/{chat.pk}/reply", body, key="r1").status_code == 201
    again = support.post(f"/api/v1/support/chats/{chat.pk}/reply", body, key="r1")
    assert assert_problem(again, 409, "idempotency_key_reused")["previous"]["status"] == 201
    assert sent(chat).count() == 1


# --- rule 6: tickets -----------------------------------------------------------------------------------


def _ticket(support, chat, number=7):
    return Ticket.objects.create(widget=support.widget, number=number, chat=chat, app_user_id=f"u{number}")


def test_close_ticket_defaults_to_true(support):
    chat = support.chat()
    ticket = _ticket(support, chat)
    effect = support.reply(chat, "Done", ticket=ticket.number).json()["ticket_effect"]
    assert effect == {"ticket": 7, "effect": "closed", "state": "closed"}
    ticket.refresh_from_db()
    assert ticket.state == "closed" and ticket.reason == "answered"


def test_close_ticket_false_holds_it_for_the_owner(support):
    chat = support.chat()
    ticket = _ticket(support, chat)
    effect = support.reply(chat, "Checking", ticket=ticket.number, close_ticket=False).json()["ticket_effect"]
    assert effect["effect"] == "held_for_owner"
    ticket.refresh_from_db()
    assert ticket.state == "open" and ticket.held_for_owner is True


def test_a_reply_naming_no_ticket_changes_none(support):
    chat = support.chat()
    ticket = _ticket(support, chat)
    assert support.reply(chat, "Hi").json()["ticket_effect"] == {"ticket": None, "effect": "none"}
    ticket.refresh_from_db()
    assert ticket.state == "open"


def test_a_ticket_of_another_chat_is_422_and_nothing_is_sent(support):
    chat, other = support.chat(), support.chat()
    ticket = _ticket(support, other)
    assert_problem(support.reply(chat, "Hi", ticket=ticket.number), 422)
    assert not sent(chat).exists()


# --- rule 7 and the audit ------------------------------------------------------------------------------


def test_replies_are_marked_for_learning_and_labelled_in_the_audit(support):
    chat = support.chat()
    body = support.reply(chat, "Hello").json()
    assert Message.objects.get(pk=body["message_id"]).origin == SUPPORT_REPLY_ORIGIN
    row = SupportAction.objects.get(pk=body["action_id"])
    assert row.is_support_reply and row.outcome == "ok" and row.message_id == body["message_id"]
    assert row.kind == "chats.reply" and row.service_agent == "agent-1" and row.status_code == 201


def test_every_refused_reply_leaves_an_audit_row_without_its_text(support):
    chat = support.chat()
    secret = "call me at evil.com please"
    support.reply(chat, secret)
    support.reply(chat, "a\tb")
    support.post(f"/api/v1/support/chats/{chat.pk}/reply", {"text": "x", "expected_last_message_id": 1, "bad": 1})
    rows = list(SupportAction.objects.filter(kind="chats.reply").order_by("id"))
    assert [r.reason for r in rows] == ["link_not_allowed", "forbidden_whitespace", "validation_failed"]
    assert all(r.outcome == "refused" and r.is_support_reply for r in rows)
    assert rows[0].text_sha256 == hashlib.sha256(secret.encode()).hexdigest() and rows[0].text_length == len(secret)
    for row in SupportAction.objects.all():
        assert secret not in str(row.__dict__)


def test_audit_rows_older_than_180_days_are_purged(support):
    from apps.support.tasks import purge_support_audit

    chat = support.chat()
    support.reply(chat, "Hi")
    old = SupportAction.objects.create(
        widget=support.widget, token_prefix="cwt_x", kind="chats.reply", method="POST", path="/x"
    )
    SupportAction.objects.filter(pk=old.pk).update(created_at=timezone.now() - timedelta(days=181))
    assert purge_support_audit() == 1
    assert SupportAction.objects.filter(pk=old.pk).count() == 0 and SupportAction.objects.count() == 1


def test_actions_of_another_token_are_404(support):
    chat = support.chat()
    body = support.reply(chat, "Hi").json()
    other, _ = support.new_client()
    assert_problem(other.get(f"/api/v1/support/actions/{body['action_id']}"), 404, "not_found")
    own = support.client.get(f"/api/v1/support/actions/{body['action_id']}").json()
    assert own["kind"] == "chats.reply" and own["outcome"] == "ok" and own["text_length"] == 2


# --- limits with a frozen clock ------------------------------------------------------------------------


def _needs_local_clock():
    if settings.REDIS_URL:
        pytest.skip("Redis budgets read the Redis server's clock, which a test cannot freeze")


def test_per_chat_limit_3_per_30_minutes_with_retry_after(support):
    _needs_local_clock()
    chat = support.chat()
    start = timezone.now()
    with time_machine.travel(start, tick=False):
        for n in range(3):
            assert support.reply(chat, f"reply {n}").status_code == 201
        refused = support.reply(chat, "one more")
        assert_problem(refused, 429, "room_reply_limit")
        assert int(refused["Retry-After"]) == 1800
    with time_machine.travel(start + timedelta(seconds=1799), tick=False):
        assert_problem(support.reply(chat, "still early"), 429, "room_reply_limit")
    with time_machine.travel(start + timedelta(seconds=1801), tick=False):
        assert support.reply(chat, "again").status_code == 201
    other = support.chat()
    assert support.reply(other, "another chat has its own budget").status_code == 201


def test_per_chat_limit_is_configurable_up_to_30_never_unlimited(support):
    from apps.support.config import ConfigInvalid

    support.configure(room_reply_limit={"count": 30, "window_sec": 1800})
    with pytest.raises(ConfigInvalid):
        support.configure(room_reply_limit={"count": 0, "window_sec": 1800})
    SupportConfig.objects.filter(widget=support.widget).update(room_reply_limit={"count": 0, "window_sec": 60})
    chat = support.chat()
    assert support.reply(chat, "a stored 0 is read as 1, never unlimited").status_code == 201
    assert_problem(support.reply(chat, "second"), 429, "room_reply_limit")


def test_per_token_limit_20_per_10_minutes(support):
    _needs_local_clock()
    support.configure(room_reply_limit={"count": 30, "window_sec": 1800})
    chat = support.chat()
    start = timezone.now()
    with time_machine.travel(start, tick=False):
        for n in range(20):
            assert support.reply(chat, f"reply {n}").status_code == 201
        refused = support.reply(chat, "21st")
        assert_problem(refused, 429, "support_rate_limited")
        assert int(refused["Retry-After"]) == 600
        other_client, _ = support.new_client()
        assert support.reply(chat, "another token has its own budget", client=other_client).status_code == 201
    with time_machine.travel(start + timedelta(seconds=601), tick=False):
        assert support.reply(chat, "later").status_code == 201


def test_per_token_day_limit(support):
    _needs_local_clock()
    support.configure(
        room_reply_limit={"count": 30, "window_sec": 1800}, token_reply_limit={"per_10_min": 0, "per_day": 4}
    )
    chat = support.chat()
    start = timezone.now()
    with time_machine.travel(start, tick=False):
        for n in range(4):
            assert support.reply(chat, f"reply {n}").status_code == 201
        refused = support.reply(chat, "5th")
        assert_problem(refused, 429, "support_rate_limited")
        assert int(refused["Retry-After"]) == 86400
    with time_machine.travel(start + timedelta(days=1, seconds=1), tick=False):
        assert support.reply(chat, "next day").status_code == 201


def test_zero_means_unlimited_per_token(support):
    support.configure(
        room_reply_limit={"count": 30, "window_sec": 1800}, token_reply_limit={"per_10_min": 0, "per_day": 0}
    )
    chat = support.chat()
    for n in range(25):
        assert support.reply(chat, f"reply {n}").status_code == 201


def test_a_refused_reply_spends_no_budget(support):
    chat = support.chat()
    for _ in range(5):
        assert_problem(support.reply(chat, "evil.com"), 422, "link_not_allowed")
    for n in range(3):
        assert support.reply(chat, f"reply {n}").status_code == 201
