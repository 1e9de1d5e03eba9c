"""Support tickets: queue order, filters, detail, close and reopen."""

from __future__ import annotations

from datetime import timedelta

import pytest
import time_machine
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from apps.chats import services as chat_services
from apps.erasure.models import PendingErasure
from apps.support.models import ChatAccount, Ticket
from tests.support.plugin import assert_problem


def make_ticket(support, number, *, user=None, priority="normal", state="open", text=None, ago=0):
    chat = support.chat(text=text or f"problem {number}", channel="app")
    at = timezone.now() - timedelta(minutes=ago)
    ChatAccount.objects.create(
        widget=support.widget,
        chat=chat,
        link="verified",
        link_source="app_ticket",
        app_user_id=user or f"u{number}",
        identity_expires_at=timezone.now() + timedelta(days=37),
    )
    return Ticket.objects.create(
        widget=support.widget,
        number=number,
        chat=chat,
        app_user_id=user or f"u{number}",
        priority=priority,
        state=state,
        closed_at=at if state == "closed" else None,
        opening_message_id=chat.last_message_id,
        created_at=at,
        updated_at=at,
    )


def numbers(response):
    assert response.status_code == 200, response.content
    return [t["number"] for t in response.json()["data"]]


def test_open_tickets_in_queue_order(support):
    make_ticket(support, 1, ago=30)
    make_ticket(support, 2, ago=60)
    make_ticket(support, 3, priority="high", ago=5)
    make_ticket(support, 4, state="closed", ago=1)
    assert numbers(support.client.get("/api/v1/support/tickets")) == [3, 2, 1]
    assert numbers(support.client.get("/api/v1/support/tickets", {"state": "closed"})) == [4]
    assert numbers(support.client.get("/api/v1/support/tickets", {"state": "all"})) == [4, 3, 1, 2]
    assert numbers(support.client.get("/api/v1/support/tickets", {"priority": "high"})) == [3]


def test_ticket_list_pages_with_a_cursor_and_fixed_queries(support):
    for n in range(1, 6):
        make_ticket(support, n, ago=60 - n)
    first = support.client.get("/api/v1/support/tickets", {"limit": "2"}).json()
    assert [t["number"] for t in first["data"]] == [1, 2]
    second = support.client.get("/api/v1/support/tickets", {"limit": "2", "cursor": first["next_cursor"]}).json()
    assert [t["number"] for t in second["data"]] == [3, 4]
    with CaptureQueriesContext(connection) as small:
        support.client.get("/api/v1/support/tickets", {"limit": "2"})
    with CaptureQueriesContext(connection) as large:
        support.client.get("/api/v1/support/tickets", {"limit": "5"})
    assert len(small.captured_queries) == len(large.captured_queries)


@pytest.mark.parametrize("params", [{"state": "pending"}, {"limit": "101"}, {"cursor": "forged"}, {"reason": "x"}])
def test_bad_ticket_list_parameters_are_422(support, params):
    assert_problem(support.client.get("/api/v1/support/tickets", params), 422)


def test_detail_has_chat_transcript_previous_numbers_and_notes(support):
    ticket = make_ticket(support, 9, text="It broke")
    ticket.previous_numbers = [3, 5]
    ticket.save()
    body = support.client.get("/api/v1/support/tickets/9").json()
    assert body["number"] == 9 and body["state"] == "open"
    assert body["chat"]["id"] == ticket.chat_id and body["chat"]["account"]["link"] == "verified"
    assert [m["text"] for m in body["opening_transcript"]] == ["It broke"]
    assert body["previous_numbers"] == [3, 5] and body["agent_notes"] == []


def test_missing_and_foreign_ticket_numbers_are_404(support, other_widget):
    from apps.chats.models import Chat

    contact = chat_services.create_contact(widget=other_widget)
    chat = Chat.objects.create(widget=other_widget, contact=contact, channel="app")
    Ticket.objects.create(widget=other_widget, number=1, chat=chat, app_user_id="x")
    assert_problem(support.client.get("/api/v1/support/tickets/1"), 404, "not_found")
    assert_problem(support.post("/api/v1/support/tickets/1/close", {"reason": "resolved"}), 404)


def test_a_ticket_whose_contact_is_under_erasure_is_404_and_never_listed(support):
    ticket = make_ticket(support, 4)
    PendingErasure.objects.create(widget=support.widget, contact_id=ticket.chat.contact_id)
    assert_problem(support.client.get("/api/v1/support/tickets/4"), 404, "not_found")
    assert numbers(support.client.get("/api/v1/support/tickets")) == []


@pytest.mark.parametrize("reason", ["resolved", "answered_by_email", "duplicate", "false_positive"])
def test_close_with_each_reason(support, reason):
    make_ticket(support, 1)
    make_ticket(support, 2)
    body = {"reason": reason, "note": "done"}
    if reason == "duplicate":
        body["duplicate_of"] = 2
    response = support.post("/api/v1/support/tickets/1/close", body)
    assert response.status_code == 200, response.content
    data = response.json()
    assert data["state"] == "closed" and data["reason"] == reason
    assert data["agent_notes"][0]["note"] == "done" and data["agent_notes"][0]["by"] == "agent-1"
    assert_problem(support.post("/api/v1/support/tickets/1/close", {"reason": reason}), 409, "ticket_closed")


@pytest.mark.parametrize("body", [{}, {"reason": "answered"}, {"reason": "resolved", "extra": 1}])
def test_close_refuses_bad_bodies(support, body):
    make_ticket(support, 1)
    assert_problem(support.post("/api/v1/support/tickets/1/close", body), 422)
    assert Ticket.objects.get(number=1).state == "open"


def test_close_accepts_support_tickets_close_alone(support):
    make_ticket(support, 1)
    client, _ = support.new_client(scopes=["support:tickets:close"])
    assert support.write(client, "/api/v1/support/tickets/1/close", {"reason": "resolved"}).status_code == 200
    reader, _ = support.new_client(scopes=["support:read"])
    make_ticket(support, 2)
    assert_problem(
        support.write(reader, "/api/v1/support/tickets/2/close", {"reason": "resolved"}), 403, "missing_scope"
    )
    # support:tickets:close does not reopen
    assert_problem(support.write(client, "/api/v1/support/tickets/1/reopen", {}), 403, "missing_scope")


def test_close_respects_another_agents_lease(support):
    ticket = make_ticket(support, 1)
    other, _ = support.new_client()
    held = support.write(other, f"/api/v1/support/chats/{ticket.chat_id}/claim", {}, agent="agent-2").json()
    assert_problem(support.post("/api/v1/support/tickets/1/close", {"reason": "resolved"}), 409, "chat_claimed")
    ok = support.write(other, "/api/v1/support/tickets/1/close", {"reason": "resolved", "claim_id": held["claim_id"]})
    assert ok.status_code == 200


def test_reopen_within_7_days_same_number(support):
    make_ticket(support, 1)
    support.post("/api/v1/support/tickets/1/close", {"reason": "resolved"})
    with time_machine.travel(timezone.now() + timedelta(days=6, hours=23)):
        response = support.post("/api/v1/support/tickets/1/reopen", {"note": "customer wrote back"})
    assert response.status_code == 200, response.content
    assert response.json()["state"] == "open" and response.json()["number"] == 1
    assert_problem(support.post("/api/v1/support/tickets/1/reopen", {}), 409, "ticket_open")


def test_reopen_after_7_days_is_409(support):
    make_ticket(support, 1)
    support.post("/api/v1/support/tickets/1/close", {"reason": "resolved"})
    with time_machine.travel(timezone.now() + timedelta(days=7, minutes=1)):
        assert_problem(support.post("/api/v1/support/tickets/1/reopen", {}), 409, "reopen_window_passed")


def test_reopen_refuses_a_second_open_ticket_of_the_account(support):
    make_ticket(support, 1, user="same")
    support.post("/api/v1/support/tickets/1/close", {"reason": "resolved"})
    Ticket.objects.create(widget=support.widget, number=2, chat=Ticket.objects.get(number=1).chat, app_user_id="same")
    assert_problem(support.post("/api/v1/support/tickets/1/reopen", {}), 409, "account_has_open_ticket")
