"""Claims, replies and signed calls raced by real threads on PostgreSQL: one winner, no double send."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from apps.chats.models import Message
from apps.support import services
from apps.support.models import SUPPORT_REPLY_ORIGIN, ChatAccount, SupportAction, SupportClaim
from tests.support.concurrency import race

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def _client(token):
    client = APIClient()
    client.raise_request_exception = False
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return client


def test_eight_agents_claiming_one_chat_one_wins(support):
    chat = support.chat()
    tokens = [support.new_client()[1] for _ in range(8)]

    def work(n):
        def run():
            response = _client(tokens[n]).post(
                f"/api/v1/support/chats/{chat.pk}/claim",
                {"ttl_sec": 300},
                format="json",
                HTTP_X_SERVICE_IDEMPOTENCY_KEY=f"claim-{n}",
                HTTP_X_SERVICE_AGENT=f"agent-{n}",
            )
            return response.status_code, response.json().get("code")

        return run

    results = race([work(n) for n in range(8)])
    assert sorted(r[0] for r in results) == [200] + [409] * 7, results
    assert {r[1] for r in results if r[0] == 409} == {"chat_claimed"}
    assert SupportClaim.objects.filter(chat=chat).count() == 1


def test_eight_replies_against_one_last_message_send_once(support):
    chat = support.chat()
    chat.refresh_from_db()
    expected = chat.last_message_id

    def work(n):
        def run():
            response = _client(support.token).post(
                f"/api/v1/support/chats/{chat.pk}/reply",
                {"text": f"Answer {n}", "expected_last_message_id": expected},
                format="json",
                HTTP_X_SERVICE_IDEMPOTENCY_KEY=f"reply-{n}",
                HTTP_X_SERVICE_AGENT="agent-1",
            )
            return response.status_code, response.json().get("code")

        return run

    results = race([work(n) for n in range(8)])
    assert sorted(r[0] for r in results) == [201] + [409] * 7, results
    assert {r[1] for r in results if r[0] == 409} == {"chat_changed"}
    assert Message.objects.filter(chat=chat, origin=SUPPORT_REPLY_ORIGIN).count() == 1
    assert SupportAction.objects.filter(kind="chats.reply").count() == 8


def test_one_key_raced_sends_once(support):
    chat = support.chat()
    chat.refresh_from_db()

    def run():
        response = _client(support.token).post(
            f"/api/v1/support/chats/{chat.pk}/reply",
            {"text": "Once", "expected_last_message_id": chat.last_message_id},
            format="json",
            HTTP_X_SERVICE_IDEMPOTENCY_KEY="the-same-key",
            HTTP_X_SERVICE_AGENT="agent-1",
        )
        return response.status_code

    statuses = race([run] * 6)
    assert sorted(statuses) == [201] + [409] * 5, statuses
    assert Message.objects.filter(chat=chat, origin=SUPPORT_REPLY_ORIGIN).count() == 1


def test_one_request_id_raced_binds_once_and_answers_alike(support):
    """Eight signed account-links with one `request_id` at once: one does the work, the others wait
    for it and answer what it answered."""
    chat = support.chat()
    now = timezone.now()
    data = {
        "request_id": "link-raced",
        "target": {"chat_id": chat.pk},
        "account": {"app_user_id": "user-1", "email": "c@shop.ru"},
        "method": "email_code",
        "identity_expires_at": now + timedelta(hours=2),
        "grant": {"token": "grant-token", "expires_at": now + timedelta(minutes=10)},
    }

    def run():
        return services.link_account(widget=support.widget, data=data)

    answers = race([run] * 8)
    assert all(answer == answers[0] for answer in answers), answers
    assert answers[0]["bound"] is True and answers[0]["chat_ids"] == [chat.pk]
    assert ChatAccount.objects.get(chat=chat).app_user_id == "user-1"
