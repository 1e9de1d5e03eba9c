"""Claims: leases with ttl_sec 60..1800, claim ids, renewal, release; a chat leased by one agent
is not claimed or answered by another."""

from __future__ import annotations

from datetime import timedelta

import time_machine
from django.utils import timezone

from apps.support.models import SupportClaim
from tests.support.plugin import assert_problem


def claim(support, chat, body=None, client=None, agent="agent-1"):
    return support.write(client or support.client, f"/api/v1/support/chats/{chat.pk}/claim", body or {}, agent=agent)


def test_a_claim_leases_the_chat_for_ttl(support):
    chat = support.chat()
    before = timezone.now()
    response = claim(support, chat, {"ttl_sec": 600, "note": "on it"})
    after = timezone.now()
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["ttl_sec"] == 600 and body["held_by"] == "agent-1" and len(body["claim_id"]) >= 8
    lease = SupportClaim.objects.get(chat=chat)
    # the lease runs 600 s from the moment the claim was taken, inside the request
    assert before + timedelta(seconds=600) <= lease.expires_at <= after + timedelta(seconds=600)
    detail = support.client.get(f"/api/v1/support/chats/{chat.pk}").json()
    assert detail["lease"]["mine"] is True and detail["lease"]["claim_id"] == body["claim_id"]


def test_another_claim_is_409_chat_claimed_and_does_not_see_the_claim_id(support):
    chat = support.chat()
    first = claim(support, chat).json()
    other, _ = support.new_client()
    response = claim(support, chat, client=other, agent="agent-2")
    body = assert_problem(response, 409, "chat_claimed")
    assert body["held_by"] == "agent-1"
    lease = other.get(f"/api/v1/support/chats/{chat.pk}").json()["lease"]
    assert lease["mine"] is False and lease["claim_id"] is None and lease["held_by"] == "agent-1"
    assert SupportClaim.objects.get(chat=chat).claim_id == first["claim_id"]


def test_the_holder_renews_with_its_claim_id(support):
    chat = support.chat()
    first = claim(support, chat, {"ttl_sec": 60}).json()
    renewed = claim(support, chat, {"ttl_sec": 1800, "claim_id": first["claim_id"]})
    assert renewed.status_code == 200
    assert renewed.json()["claim_id"] == first["claim_id"]
    assert renewed.json()["claimed_at"] == first["claimed_at"]


def test_an_expired_lease_can_be_claimed_by_another(support):
    chat = support.chat()
    claim(support, chat, {"ttl_sec": 60})
    with time_machine.travel(timezone.now() + timedelta(seconds=61)):
        other, _ = support.new_client()
        response = claim(support, chat, client=other, agent="agent-2")
    assert response.status_code == 200, response.content
    assert SupportClaim.objects.get(chat=chat).service_agent == "agent-2"


def test_release_needs_the_claim_id(support):
    chat = support.chat()
    first = claim(support, chat).json()
    wrong = support.post(f"/api/v1/support/chats/{chat.pk}/release", {"claim_id": "0" * 32})
    assert_problem(wrong, 409, "claim_mismatch")
    ok = support.post(f"/api/v1/support/chats/{chat.pk}/release", {"claim_id": first["claim_id"]})
    assert ok.status_code == 200 and ok.json()["released"] is True
    again = support.post(f"/api/v1/support/chats/{chat.pk}/release", {"claim_id": first["claim_id"]})
    assert_problem(again, 409, "claim_mismatch")
    other, _ = support.new_client()
    assert claim(support, chat, client=other, agent="agent-2").status_code == 200


def test_release_requires_claim_id(support):
    chat = support.chat()
    problem = assert_problem(support.post(f"/api/v1/support/chats/{chat.pk}/release", {}), 422)
    assert "claim_id" in problem["errors"]


def test_a_reply_to_a_chat_leased_by_another_claim_is_409(support):
    chat = support.chat()
    other, _ = support.new_client()
    held = claim(support, chat, client=other, agent="agent-2").json()
    response = support.reply(chat, "Hello")
    assert_problem(response, 409, "chat_claimed")
    wrong_id = support.reply(chat, "Hello", claim_id="f" * 32)
    assert_problem(wrong_id, 409, "chat_claimed")
    assert chat.messages.count() == 1
    own = support.reply(chat, "Hello", client=other, claim_id=held["claim_id"])
    assert own.status_code == 201, own.content


def test_a_foreign_chat_claim_is_404(support, other_widget):
    from apps.chats import services as chat_services

    contact = chat_services.create_contact(widget=other_widget)
    foreign = chat_services.post_client_message(
        widget=other_widget, contact=contact, data=chat_services.MessageInput(body="x")
    ).chat
    assert_problem(claim(support, foreign), 404, "not_found")
