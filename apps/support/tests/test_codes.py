"""Rule 8 of the support reply rules and the e-mail code fields of `chat.account`, from the spec's
sentences:

  A code typed by the customer while a person handles the chat is checked silently and shown in
  `chat.account`; while an agent handles the chat (lease, action on the open ticket, ticket held for
  the owner, or agent reply in the 24 h before the customer's message unless the customer chose the
  assistant) the chat sends no codes.

  code_pending: a code can still be typed; code_expires_at: code stops working 10 minutes after
  sending; last_code_result: verified, wrong, expired, attempts_exhausted, rate_limited, consumed;
  email_requested: the chat asked the customer for the mailbox and will mail the code on arrival.
  Identity lifetimes: 24 h after a code. The code and the mailbox are never shown except the
  confirmed mailbox as stated.
"""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
import time_machine
from django.core import mail
from django.utils import timezone

from apps.chats import services as chat_services
from apps.chats.models import Chat, Message
from apps.core import events
from apps.support import codes
from apps.support.models import ChatAccount, SupportAction, Ticket

pytestmark = pytest.mark.django_db


@pytest.fixture
def mailed(django_capture_on_commit_callbacks):
    """Run a call with its on-commit callbacks (the mail goes out after the commit)."""

    def run(fn, *args, **kwargs):
        with django_capture_on_commit_callbacks(execute=True):
            return fn(*args, **kwargs)

    return run


def _code_of(message) -> str:
    return re.search(r"[0-9]{6}", message.body).group(0)


def _type(support, chat, text):
    return chat_services.post_client_message(
        widget=support.widget, contact=chat.contact, data=chat_services.MessageInput(body=text), channel=chat.channel
    )


def _account(support, chat) -> dict:
    return support.client.get(f"/api/v1/support/chats/{chat.pk}").json()["account"]


def _request(support, chat, mailed, email="client@mail.ru"):
    return mailed(codes.request_code, widget=support.widget, chat=chat, email=email)


# --- sending ----------------------------------------------------------------------------------------------


def test_a_code_is_mailed_and_shown_as_pending_never_itself(support, mailed):
    chat = support.chat()
    assert _request(support, chat, mailed) == codes.SENT
    [sent] = mail.outbox
    assert sent.to == ["client@mail.ru"]
    code = _code_of(sent)
    account = _account(support, chat)
    assert account["link"] == "awaiting_code" and account["code_pending"] is True
    assert account["email"] is None and account["email_requested"] is False
    row = ChatAccount.objects.get(chat=chat)
    assert row.code_expires_at - timezone.now() <= timedelta(minutes=10)
    assert code not in str(ChatAccount.objects.filter(chat=chat).values().get())
    detail = support.client.get(f"/api/v1/support/chats/{chat.pk}").content.decode()
    assert code not in detail and "client@mail.ru" not in detail


def test_a_right_code_verifies_the_mailbox_for_24_hours(support, mailed):
    chat = support.chat()
    _request(support, chat, mailed)
    _type(support, chat, _code_of(mail.outbox[0]))
    account = _account(support, chat)
    assert account["link"] == "verified" and account["link_source"] == "email_code"
    assert account["email"] == "client@mail.ru" and account["app_user_id"] is None
    assert account["last_code_result"] == "verified" and account["code_pending"] is False
    row = ChatAccount.objects.get(chat=chat)
    assert timedelta(hours=23, minutes=59) < row.identity_expires_at - timezone.now() <= timedelta(hours=24)


def test_the_code_may_be_typed_with_a_space_or_a_dash(support, mailed):
    chat = support.chat()
    _request(support, chat, mailed)
    code = _code_of(mail.outbox[0])
    _type(support, chat, f" {code[:3]}-{code[3:]} ")
    assert _account(support, chat)["last_code_result"] == "verified"


def test_a_wrong_code_counts_an_attempt_and_the_fifth_exhausts_them(support, mailed):
    chat = support.chat()
    _request(support, chat, mailed)
    code = _code_of(mail.outbox[0])
    wrong = f"{(int(code) + 1) % 10**6:06d}"
    for n in range(1, codes.MAX_ATTEMPTS):
        _type(support, chat, wrong)
        account = _account(support, chat)
        assert account["last_code_result"] == "wrong" and account["code_pending"] is True, n
    _type(support, chat, wrong)
    assert _account(support, chat)["last_code_result"] == "attempts_exhausted"
    _type(support, chat, code)  # even the right code no longer works
    account = _account(support, chat)
    assert account["last_code_result"] == "attempts_exhausted" and account["link"] == "anonymous"
    assert account["code_pending"] is False


def test_a_code_stops_working_10_minutes_after_sending(support, mailed):
    chat = support.chat()
    _request(support, chat, mailed)
    code = _code_of(mail.outbox[0])
    with time_machine.travel(timezone.now() + timedelta(minutes=10, seconds=1)):
        _type(support, chat, code)
        account = _account(support, chat)
    assert account["last_code_result"] == "expired" and account["link"] == "anonymous"
    assert account["code_pending"] is False


def test_a_used_code_typed_again_is_consumed(support, mailed):
    chat = support.chat()
    _request(support, chat, mailed)
    code = _code_of(mail.outbox[0])
    _type(support, chat, code)
    _type(support, chat, code)
    account = _account(support, chat)
    assert account["last_code_result"] == "consumed" and account["link"] == "verified"


def test_digits_without_a_code_are_only_a_message(support):
    chat = support.chat()
    _type(support, chat, "123456")
    assert not ChatAccount.objects.filter(chat=chat).exists()
    assert _account(support, chat)["last_code_result"] is None


def test_at_most_3_codes_an_hour_then_rate_limited(support, mailed):
    chat = support.chat()
    for _ in range(codes.CODES_PER_HOUR):
        assert _request(support, chat, mailed) == codes.SENT
    assert _request(support, chat, mailed) == codes.RATE_LIMITED
    assert len(mail.outbox) == codes.CODES_PER_HOUR
    assert _account(support, chat)["last_code_result"] == "rate_limited"
    with time_machine.travel(timezone.now() + timedelta(hours=1, seconds=1)):
        assert _request(support, chat, mailed) == codes.SENT


def test_only_the_latest_code_works(support, mailed):
    chat = support.chat()
    _request(support, chat, mailed)
    _request(support, chat, mailed)
    first, second = (_code_of(m) for m in mail.outbox)
    if first != second:
        _type(support, chat, first)
        assert _account(support, chat)["last_code_result"] == "wrong"
    _type(support, chat, second)
    assert _account(support, chat)["last_code_result"] == "verified"


def test_a_verified_chat_is_sent_no_code(support, mailed):
    chat = support.chat()
    _request(support, chat, mailed)
    _type(support, chat, _code_of(mail.outbox[0]))
    assert _request(support, chat, mailed) == codes.ALREADY_VERIFIED
    assert len(mail.outbox) == 1


# --- the mailbox asked for ----------------------------------------------------------------------------------


def test_the_chat_asks_for_the_mailbox_and_mails_the_code_when_it_arrives(support, mailed):
    chat = support.chat()
    assert _request(support, chat, mailed, email=None) == codes.REQUESTED
    account = _account(support, chat)
    assert account["email_requested"] is True and account["link"] == "awaiting_code"
    assert mail.outbox == []
    mailbox = mailed(_type, support, chat, "sure, it is Client@Mail.ru thanks")
    [sent] = mail.outbox
    assert sent.to == ["client@mail.ru"]
    account = _account(support, chat)
    assert account["email_requested"] is False and account["code_pending"] is True
    texts = {m["id"]: m["text"] for m in support.client.get(f"/api/v1/support/chats/{chat.pk}/messages").json()["data"]}
    assert texts[mailbox.pk] == f"sure, it is {codes.EMAIL_HIDDEN} thanks"


def test_a_mailbox_nobody_asked_for_sends_nothing(support, mailed):
    chat = support.chat()
    mailed(_type, support, chat, "my mail is client@mail.ru")
    assert mail.outbox == []
    texts = [m["text"] for m in support.client.get(f"/api/v1/support/chats/{chat.pk}/messages").json()["data"]]
    assert "my mail is client@mail.ru" in texts


def test_the_typed_code_never_shows_in_the_support_api(support, mailed):
    chat = support.chat()
    _request(support, chat, mailed)
    code = _code_of(mail.outbox[0])
    typed = _type(support, chat, code)
    body = support.client.get(f"/api/v1/support/chats/{chat.pk}/messages").json()
    [shown] = [m for m in body["data"] if m["id"] == typed.pk]
    assert shown["text"] == codes.CODE_HIDDEN
    assert code not in str(body)


# --- rule 8: while an agent handles the chat, no codes are sent ------------------------------------------------


def test_no_code_while_the_chat_is_leased(support, mailed):
    chat = support.chat()
    assert support.post(f"/api/v1/support/chats/{chat.pk}/claim", {}).status_code == 200
    assert _request(support, chat, mailed) == codes.SUPPRESSED
    assert mail.outbox == [] and not ChatAccount.objects.filter(chat=chat, code_hash__gt="").exists()


def test_a_released_lease_lets_codes_go_again(support, mailed):
    chat = support.chat()
    claim = support.post(f"/api/v1/support/chats/{chat.pk}/claim", {}).json()
    support.post(f"/api/v1/support/chats/{chat.pk}/release", {"claim_id": claim["claim_id"]})
    assert _request(support, chat, mailed) == codes.SENT


def test_no_code_after_an_agent_reply_in_the_last_24_hours(support, mailed):
    chat = support.chat()
    assert support.reply(chat, "Let me check").status_code == 201
    assert _request(support, chat, mailed) == codes.SUPPRESSED
    with time_machine.travel(timezone.now() + timedelta(hours=24, minutes=1)):
        assert _request(support, chat, mailed) == codes.SENT


def test_an_operator_console_reply_counts_as_an_agent_reply(support, mailed):
    chat = support.chat()
    chat_services.post_agent_message(
        widget=support.widget, chat=chat, agent=support.operator, data=chat_services.MessageInput(body="Hi")
    )
    assert _request(support, chat, mailed) == codes.SUPPRESSED


def test_codes_go_when_the_customer_chose_the_assistant_after_the_agent(support, mailed):
    chat = support.chat()
    support.reply(chat, "Let me check")
    Chat.objects.filter(pk=chat.pk).update(handling=Chat.Handling.HUMAN_TO_AI)
    assert _request(support, chat, mailed) == codes.SENT


def _ticket_chat(support, *, held=False):
    chat = support.chat()
    ticket = Ticket.objects.create(
        widget=support.widget, number=1, chat=chat, app_user_id="user-1", held_for_owner=held
    )
    return chat, ticket


def test_no_code_while_the_open_ticket_is_held_for_the_owner(support, mailed):
    chat, _ = _ticket_chat(support, held=True)
    assert _request(support, chat, mailed) == codes.SUPPRESSED


def test_no_code_after_an_action_on_the_open_ticket(support, mailed):
    chat, ticket = _ticket_chat(support)
    assert _request(support, chat, mailed) == codes.SENT
    ticket.state, ticket.closed_at = Ticket.State.CLOSED, timezone.now()
    ticket.save()
    assert support.post("/api/v1/support/tickets/1/reopen", {}).status_code == 200
    assert SupportAction.objects.filter(ticket_number=1, method="POST").exists()
    assert _request(support, chat, mailed) == codes.SUPPRESSED


def test_a_mailbox_arriving_while_an_agent_handles_the_chat_is_mailed_nothing(support, mailed):
    chat = support.chat()
    _request(support, chat, mailed, email=None)
    support.post(f"/api/v1/support/chats/{chat.pk}/claim", {})
    mailed(_type, support, chat, "client@mail.ru")
    assert mail.outbox == []
    assert _account(support, chat)["email_requested"] is True


def test_a_code_typed_while_a_person_handles_the_chat_is_checked_silently(support, mailed):
    chat = support.chat()
    _request(support, chat, mailed)
    code = _code_of(mail.outbox[0])
    support.post(f"/api/v1/support/chats/{chat.pk}/claim", {})
    support.reply(chat, "I am here")
    before = Message.objects.filter(chat=chat).count()
    captured = []
    events.subscribe(events.MESSAGE_CREATED, captured.append, phase=events.IN_TRANSACTION)
    try:
        _type(support, chat, code)
    finally:
        events._handlers[(events.MESSAGE_CREATED, events.IN_TRANSACTION)].remove(captured.append)
    assert Message.objects.filter(chat=chat).count() == before + 1  # the customer's message only
    assert len(captured) == 1
    account = _account(support, chat)
    assert account["link"] == "verified" and account["last_code_result"] == "verified"


# --- entry through the event, and revoke ------------------------------------------------------------------------


def test_the_chat_code_requested_event_sends_a_code(support, mailed):
    chat = support.chat()

    def emit():
        events.emit(support.widget, events.CHAT_CODE_REQUESTED, chat_id=chat.pk, email="client@mail.ru")

    mailed(emit)
    assert [m.to for m in mail.outbox] == [["client@mail.ru"]]


def test_the_event_sends_nothing_while_an_agent_handles_the_chat(support, mailed):
    chat = support.chat()
    support.post(f"/api/v1/support/chats/{chat.pk}/claim", {})
    mailed(lambda: events.emit(support.widget, events.CHAT_CODE_REQUESTED, chat_id=chat.pk, email="c@mail.ru"))
    assert mail.outbox == []


def test_a_code_of_another_widget_is_not_checked_here(support, mailed, other_widget):
    chat = support.chat()
    _request(support, chat, mailed)
    code = _code_of(mail.outbox[0])
    contact = chat_services.create_contact(widget=other_widget)
    foreign = chat_services.post_client_message(
        widget=other_widget, contact=contact, data=chat_services.MessageInput(body=code)
    )
    assert not ChatAccount.objects.filter(chat=foreign.chat).exists()
    assert _account(support, chat)["code_pending"] is True


def test_revoke_drops_a_pending_code(support, mailed):
    from apps.support import services

    chat = support.chat()
    _request(support, chat, mailed)
    code = _code_of(mail.outbox[0])
    ChatAccount.objects.filter(chat=chat).update(app_user_id="user-1")
    services.revoke_account(
        widget=support.widget,
        data={"request_id": "rv", "target": {"chat_id": chat.pk}, "reason": "x"},
    )
    _type(support, chat, code)
    account = _account(support, chat)
    assert account["link"] == "anonymous" and account["code_pending"] is False
    assert account["last_code_result"] is None


def test_a_code_never_revives_a_lapsed_account_binding(support, mailed):
    chat = support.chat()
    ChatAccount.objects.create(
        widget=support.widget,
        chat=chat,
        link=ChatAccount.Link.VERIFIED,
        link_source="cabinet",
        app_user_id="user-1",
        identity_expires_at=timezone.now() - timedelta(minutes=1),
    )
    _request(support, chat, mailed)
    _type(support, chat, _code_of(mail.outbox[0]))
    account = _account(support, chat)
    assert account["link"] == "verified" and account["link_source"] == "email_code"
    assert account["app_user_id"] is None and account["email"] == "client@mail.ru"


def test_a_code_typed_after_the_backend_bound_the_chat_leaves_the_binding(support, mailed):
    chat = support.chat()
    _request(support, chat, mailed)
    ChatAccount.objects.filter(chat=chat).update(
        link=ChatAccount.Link.VERIFIED,
        link_source="cabinet",
        app_user_id="user-1",
        email="owner@shop.ru",
        identity_expires_at=timezone.now() + timedelta(hours=1),
    )
    _type(support, chat, _code_of(mail.outbox[0]))
    account = _account(support, chat)
    assert account["last_code_result"] == "verified" and account["link_source"] == "cabinet"
    assert account["app_user_id"] == "user-1" and account["email"] == "owner@shop.ru"
