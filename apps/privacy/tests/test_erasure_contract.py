"""A contact under erasure reads as missing on every surface, from the moment its erasure is
accepted until the worker has deleted it.

One widget, two people made through the services (chats on two channels, messages, files, a
rating, statistics facts, a support ticket): `kept`, and `gone`, whose erasure is accepted and whose
worker has not run. Each surface is asked for both: `kept` proves the surface would show the row,
`gone` must be absent (lists) or 404 (details). The selectors' side is
apps/privacy/tests/test_erasure_selectors.py.
"""

from __future__ import annotations

import csv
import io
import json
import uuid
from dataclasses import dataclass
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from apps.agents.tests.factories import HumanAgentFactory
from apps.ai.assist import summarise_handover
from apps.ai.runtime.answering import answer
from apps.ai.tests.factories import AiOperatorFactory, AssistantFactory
from apps.canned.models import CannedResponse
from apps.chats import services as chat_services
from apps.chats.models import Chat, VisitorSession
from apps.chats.services import rooms
from apps.chats.visitor import auth as visitor_auth
from apps.compat import services as compat
from apps.core import services as core_services
from apps.erasure.models import PendingErasure
from apps.privacy import services as privacy
from apps.stats.models import ChatFacts
from apps.support.config import configure_support
from apps.support.models import ChatAccount, Ticket

from .data import Person, make_person

pytestmark = pytest.mark.django_db


@dataclass
class World:
    widget: object
    kept: Person
    gone: Person
    tickets: dict[str, Ticket]


def _ticket(widget, person: Person, number: int) -> Ticket:
    chat = person.chats[0]
    ChatAccount.objects.create(widget=widget, chat=chat, link="verified", app_user_id=f"user-{number}")
    return Ticket.objects.create(
        widget=widget, number=number, chat=chat, app_user_id=f"user-{number}", opening_message_id=chat.last_message_id
    )


@pytest.fixture
def world(widget) -> World:
    kept = make_person(widget, tag="kept")
    gone = make_person(widget, tag="gone")
    tickets = {"kept": _ticket(widget, kept, 1), "gone": _ticket(widget, gone, 2)}
    privacy.request_contact_erasure(widget=widget, contact=gone.contact)
    assert PendingErasure.objects.filter(contact_id=gone.contact.pk).exists()
    # the worker has not run: every row of `gone` is still stored
    assert Chat.objects.filter(contact=gone.contact).count() == 2
    assert ChatFacts.objects.filter(contact_id=gone.contact.pk).count() == 2
    return World(widget=widget, kept=kept, gone=gone, tickets=tickets)


def _ids(response, key="id") -> set:
    assert response.status_code == 200, response.content
    return {row[key] for row in response.json()["data"]}


def _status(response) -> int:
    return response.status_code


# --- the REST API ---------------------------------------------------------------------------------


def test_rest_contacts_list_search_detail_and_export(api, world):
    client, kept, gone = api(), world.kept.contact, world.gone.contact
    listed = _ids(client.get("/api/v1/contacts"))
    assert kept.guid in listed and gone.guid not in listed
    for person in (world.kept, world.gone):
        found = _ids(client.get("/api/v1/contacts", {"query": person.contact.name}))
        assert found == ({kept.guid} if person is world.kept else set())
    assert _status(client.get(f"/api/v1/contacts/{kept.guid}")) == 200
    assert _status(client.get(f"/api/v1/contacts/{gone.guid}")) == 404
    assert _status(client.get(f"/api/v1/contacts/{kept.guid}/export")) == 200
    assert _status(client.get(f"/api/v1/contacts/{gone.guid}/export")) == 404


@pytest.mark.parametrize(
    "query",
    [{}, {"status": "active"}, {"channel": "telegram"}, {"has_client_messages": "1"}, {"q": "secret"}],
    ids=["all", "status", "channel", "client-wrote", "search"],
)
def test_rest_chat_list_and_search(api, world, query):
    listed = _ids(api().get("/api/v1/chats", query))
    kept, gone = {c.pk for c in world.kept.chats}, {c.pk for c in world.gone.chats}
    assert listed & kept and not listed & gone


def test_rest_chat_details_messages_and_transcript(api, world):
    client = api()
    for person, expected in ((world.kept, 200), (world.gone, 404)):
        for chat in person.chats:
            assert _status(client.get(f"/api/v1/chats/{chat.pk}")) == expected
            assert _status(client.get(f"/api/v1/chats/{chat.pk}/messages")) == expected
            assert _status(client.get(f"/api/v1/chats/{chat.pk}/transcript")) == expected


def test_rest_files(api, world):
    client = api()
    for person, expected in ((world.kept, 302), (world.gone, 404)):
        for file in person.files:
            assert _status(client.get(f"/api/v1/files/{file.pk}")) == expected, file.original_name


def test_rest_canned_rendered_for_a_chat(api, world):
    canned = CannedResponse.objects.create(widget=world.widget, shortcut="hi", title="Hi", text="Hello {name}")
    client = api()
    for person, expected in ((world.kept, 200), (world.gone, 404)):
        response = client.get(f"/api/v1/canned-responses/{canned.pk}/render", {"chat_id": person.chats[0].pk})
        assert _status(response) == expected, response.content


# --- the support API ------------------------------------------------------------------------------


@pytest.fixture
def support_client(world) -> APIClient:
    operator = HumanAgentFactory(widget=world.widget)
    issued = core_services.issue_token(widget=world.widget, scopes=["support:read", "support:write"])
    configure_support(
        widget=world.widget,
        data={
            "enabled": True,
            "operator_agent_id": operator.pk,
            "allowed_tokens": [issued.plaintext[:12]],
            "ip_allowlist": ["127.0.0.1/32", "::1/128"],
            "channels": ["widget"],
        },
    )
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {issued.plaintext}")
    return client


def test_support_tickets_and_chats(world, support_client):
    client = support_client
    listed = _ids(client.get("/api/v1/support/tickets", {"state": "all"}), key="number")
    assert listed == {world.tickets["kept"].number}
    assert _status(client.get(f"/api/v1/support/tickets/{world.tickets['kept'].number}")) == 200
    assert _status(client.get(f"/api/v1/support/tickets/{world.tickets['gone'].number}")) == 404
    since = (timezone.now() - timedelta(days=1)).isoformat()
    chats = _ids(client.get("/api/v1/support/chats", {"updated_since": since, "min_idle_sec": 0}))
    assert chats & {c.pk for c in world.kept.chats} and not chats & {c.pk for c in world.gone.chats}
    for person, expected in ((world.kept, 200), (world.gone, 404)):
        chat = person.chats[0]
        assert _status(client.get(f"/api/v1/support/chats/{chat.pk}")) == expected
        assert _status(client.get(f"/api/v1/support/chats/{chat.pk}/messages")) == expected


# --- the chats export (the statistics' per-chat rows) ---------------------------------------------


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_chats_export(api, world, fmt):
    today = timezone.localdate()
    window = {"from": str(today - timedelta(days=1)), "to": str(today + timedelta(days=2)), "format": fmt}
    response = api().get("/api/v1/chats/export", window)
    assert response.status_code == 200, response.content
    body = b"".join(response.streaming_content).decode()
    if fmt == "csv":
        rows = list(csv.DictReader(io.StringIO(body)))
    else:
        rows = [json.loads(line) for line in body.splitlines()]
    ids = {int(row["id"]) for row in rows}
    assert ids == {c.pk for c in world.kept.chats}
    assert world.gone.contact.guid not in body


# --- the visitor API ------------------------------------------------------------------------------


def _visitor_session(widget, person: Person) -> str:
    """A session of `person` (the acceptance ended the sessions of `gone`: this one outlived it, as
    one racing the acceptance would)."""
    token = visitor_auth.new_session_token()
    VisitorSession.objects.create(widget=widget, contact=person.contact, token_hash=visitor_auth.hash_token(token))
    return token


def test_visitor_messages(client, world):
    url = f"/api/visitor/v1/{world.widget.button_guid}/messages"
    for person in (world.kept, world.gone):
        token = _visitor_session(world.widget, person)
        response = client.get(url, HTTP_AUTHORIZATION=f"Visitor {token}")
        assert response.status_code == 200, response.content
        bodies = {m.get("body") for m in response.json()["data"]}
        if person is world.kept:
            assert "my secret kept 0" in bodies
        else:
            assert bodies == set()


# --- the operator console -------------------------------------------------------------------------


@pytest.fixture
def console(world) -> Client:
    operator = HumanAgentFactory(widget=world.widget)
    client = Client()
    client.force_login(operator.user)
    return client


@pytest.mark.parametrize("query", [{}, {"q": "secret"}, {"channel": "telegram"}], ids=["inbox", "search", "channel"])
def test_console_inbox_and_search(console, world, query):
    response = console.get("/console/", query)
    assert response.status_code == 200
    page = response.content.decode()
    assert world.kept.contact.name in page and world.gone.contact.name not in page


def test_console_chat_pages(console, world):
    for person, expected in ((world.kept, 200), (world.gone, 404)):
        for chat in person.chats:
            for tail in ("", "messages/?after=0", "panel/"):
                response = console.get(f"/console/chats/{chat.pk}/{tail}")
                assert response.status_code == expected, (tail, response.status_code)


# --- the compat Bot API ---------------------------------------------------------------------------


def test_compat_bot_message(world, settings):
    settings.OUTBOUND_ALLOW_LOOPBACK = True
    bot, token, _ = compat.create_compat_bot(widget=world.widget, url="https://127.0.0.1:9/bot")
    rooms = [world.kept.chats[0].pk, world.gone.chats[0].pk]
    Chat.objects.filter(pk__in=rooms).update(agent=None)  # no person handles them: the bot serves both
    client = Client()
    for chat_id, expected in zip(rooms, (200, 404), strict=True):
        for kind in ("BOT_MESSAGE", "INVITE_AGENT"):
            body = {"message_type": kind, "chat_id": chat_id, "message": {"type": "TEXT", "text": "hello"}}
            response = client.post(
                f"/api/compat/legacy/bot/{token}",
                json.dumps(body),
                content_type="application/json",
                HTTP_X_REQUEST_ID=uuid.uuid4().hex,
            )
            assert response.status_code == expected, (kind, response.content)


# --- the AI: nothing of the person goes to a provider ---------------------------------------------


def test_ai_suggest_reply_route(api, world):
    client = api()
    kept = client.post(f"/api/v1/chats/{world.kept.chats[0].pk}/suggest-reply", {}, format="json")
    gone = client.post(f"/api/v1/chats/{world.gone.chats[0].pk}/suggest-reply", {}, format="json")
    assert kept.status_code != 404 and gone.status_code == 404, (kept.content, gone.content)


def test_ai_answer_and_handover_summary(world):
    operator = AiOperatorFactory(assistant=AssistantFactory(widget=world.widget))
    assert answer(message_id=world.kept.messages[0].pk) != "not_a_visitor_message"
    assert answer(message_id=world.gone.messages[0].pk) == "not_a_visitor_message"
    assert summarise_handover(chat_id=world.kept.chats[0].pk, operator_id=operator.pk) != "gone"
    assert summarise_handover(chat_id=world.gone.chats[0].pk, operator_id=operator.pk) == "gone"


# --- the writes: none reaches the person's chats --------------------------------------------------


def test_no_visitor_write_finds_a_room_of_the_contact_under_erasure(world):
    widget = world.widget
    # lock_chat itself: apps/privacy/tests/test_erasure.py (here the fixture's writes locked the
    # chats earlier in this transaction)
    assert rooms.find_room(widget=widget, contact=world.kept.contact, channel="widget") is not None
    assert rooms.find_room(widget=widget, contact=world.gone.contact, channel="widget") is None
    data = chat_services.MessageInput(body="once more")
    chat_services.post_client_message(widget=widget, contact=world.kept.contact, data=data)
    with pytest.raises(Chat.DoesNotExist):
        chat_services.post_client_message(widget=widget, contact=world.gone.contact, data=data)
