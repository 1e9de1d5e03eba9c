"""Every path of one chat transition has the same effects: the statistics facts (in the change's
transaction), the websocket push (after commit) and the outbox row (webhooks), whichever entry point
made it: the REST API, the visitor API or the beat job. One test per transition and entry point.
"""

import json
from datetime import timedelta
from itertools import count

import pytest
from django.utils import timezone

from apps.chats import services as chat_services
from apps.chats import tasks as chat_tasks
from apps.chats.models import Chat, Contact
from apps.chats.tests.factories import AgentFactory, ChatFactory, ContactFactory, MessageFactory
from apps.stats.models import ChatFacts, DailyAgentFacts, DailyWidgetFacts

pytestmark = pytest.mark.django_db

_keys = count()


def idem() -> dict:
    return {"HTTP_X_SERVICE_IDEMPOTENCY_KEY": f"transition-{next(_keys)}"}


@pytest.fixture
def pushes(monkeypatch):
    """(groups, frame) of every websocket push, in order."""
    from apps.chats import realtime

    sent: list[tuple[list[str], dict]] = []
    monkeypatch.setattr(realtime, "push", lambda groups, frame: sent.append((list(groups), frame)))
    return sent


@pytest.fixture
def run(django_capture_on_commit_callbacks):
    """Run a call and its on-commit callbacks (the test transaction never commits)."""

    def call(fn, *args, **kwargs):
        with django_capture_on_commit_callbacks(execute=True):
            return fn(*args, **kwargs)

    return call


def widget_totals(widget) -> dict:
    rows = DailyWidgetFacts.objects.filter(widget=widget)
    keys = ("chats_total", "messages_total", "rating_sum", "rating_count", "chats_accepted_human")
    return {k: sum(getattr(r, k) for r in rows) for k in keys}


def agent_totals(widget, agent) -> dict:
    rows = DailyAgentFacts.objects.filter(widget=widget, agent_id=agent.pk)
    keys = ("messages_total", "transferred_in", "transferred_out")
    return {k: sum(getattr(r, k) for r in rows) for k in keys}


def visitor(client, widget, route, body=None, token=None):
    extra = {"HTTP_AUTHORIZATION": f"Visitor {token}"} if token else {}
    return client.post(
        f"/api/visitor/v1/{widget.button_guid}/{route}",
        json.dumps(body or {}),
        content_type="application/json",
        **extra,
    )


@pytest.fixture
def visitor_token(client, widget) -> str:
    response = visitor(client, widget, "sessions", {"name": "Anna"})
    assert response.status_code == 201, response.content
    return response.json()["session_token"]


def new_events(captured_events, before: int) -> list[str]:
    return [type for type, _ in captured_events()[before:]]


# --- message.created --------------------------------------------------------------------------------------


def test_a_visitor_message_counts_pushes_and_emits_through_the_visitor_api(
    client, widget, visitor_token, pushes, captured_events, run
):
    response = run(visitor, client, widget, "messages", {"type": "text", "body": "Hello"}, visitor_token)
    assert response.status_code == 201, response.content
    chat = Chat.objects.get(widget=widget)
    assert new_events(captured_events, 0) == ["chat.created", "message.created"]
    assert widget_totals(widget)["chats_total"] == 1 and widget_totals(widget)["messages_total"] == 1
    assert ChatFacts.objects.filter(chat=chat, conversation_started_at__isnull=False).exists()
    frames = [(groups, frame["event"]) for groups, frame in pushes]
    assert frames == [([f"widget.{widget.pk}", f"chat.{chat.pk}"], "message")]


def test_an_agent_message_counts_pushes_and_emits_through_rest(api, widget, pushes, captured_events, run):
    agent = AgentFactory(widget=widget)
    chat = ChatFactory(contact=ContactFactory(widget=widget), agent=agent)
    before = len(captured_events())
    response = run(
        api().post,
        f"/api/v1/chats/{chat.pk}/messages",
        {"type": "text", "body": "Hi", "agent_id": agent.pk},
        format="json",
        **idem(),
    )
    assert response.status_code in (200, 201, 202), response.content
    assert new_events(captured_events, before) == ["chat.accepted", "message.created"]
    assert widget_totals(widget)["messages_total"] == 1
    assert widget_totals(widget)["chats_accepted_human"] == 1
    assert agent_totals(widget, agent)["messages_total"] == 1
    # The implicit accept is pushed like an explicit one (other consoles re-read who handles it),
    # then the message.
    assert pushes[0] == ([f"widget.{widget.pk}"], {"event": "chat", "chat_id": chat.pk, "status": chat.status})
    assert [frame["event"] for _, frame in pushes] == ["chat", "message"]
    assert pushes[1][1]["message"]["body"] == "Hi"


# --- chat.closed --------------------------------------------------------------------------------------------


def _talked(widget, minutes_ago: int) -> Chat:
    at = timezone.now() - timedelta(minutes=minutes_ago)
    chat = ChatFactory(contact=ContactFactory(widget=widget), status=Chat.Status.ACTIVE, last_message_at=at)
    MessageFactory(chat=chat, created_at=at)
    return chat


def _closed_effects(widget, chat, pushes, captured_events, before):
    assert captured_events()[before:] == [
        ("chat.closed", {"chat_id": chat.pk, "reason": "expired", "button_guid": widget.button_guid})
    ]
    # the consoles re-read the list; the visitor's socket learns the room closed (the widget may ask for a rating)
    assert pushes == [
        ([f"widget.{widget.pk}", f"chat.{chat.pk}"], {"event": "chat", "chat_id": chat.pk, "status": "expired"})
    ]
    chat.refresh_from_db()
    assert chat.status == Chat.Status.EXPIRED and chat.closed_at is not None


def test_close_through_rest_pushes_and_emits(api, widget, pushes, captured_events, run):
    chat = _talked(widget, 1)
    before = len(captured_events())
    response = run(api().post, f"/api/v1/chats/{chat.pk}/close", {}, format="json", **idem())
    assert response.status_code == 200, response.content
    _closed_effects(widget, chat, pushes, captured_events, before)


def test_state_expired_through_rest_pushes_and_emits(api, widget, pushes, captured_events, run):
    chat = _talked(widget, 1)
    before = len(captured_events())
    response = run(api().post, f"/api/v1/chats/{chat.pk}/state", {"state": "expired"}, format="json", **idem())
    assert response.status_code == 200, response.content
    _closed_effects(widget, chat, pushes, captured_events, before)


def test_the_idle_sweep_closes_with_the_same_push_and_event(widget, pushes, captured_events, run):
    chat = _talked(widget, 30)
    before = len(captured_events())
    run(chat_tasks.sweep_idle_chats)
    _closed_effects(widget, chat, pushes, captured_events, before)


# --- status moves that are not closes ---------------------------------------------------------------------


def test_state_ready_through_rest_pushes_without_a_webhook(api, widget, pushes, captured_events, run):
    chat = _talked(widget, 1)
    before = len(captured_events())
    response = run(api().post, f"/api/v1/chats/{chat.pk}/state", {"state": "ready"}, format="json", **idem())
    assert response.status_code == 200, response.content
    assert captured_events()[before:] == []
    assert pushes == [([f"widget.{widget.pk}"], {"event": "chat", "chat_id": chat.pk, "status": "ready"})]


def test_the_sweep_reactivating_a_talked_in_room_pushes_like_state_active(widget, pushes, captured_events, run):
    chat = _talked(widget, 1)
    Chat.objects.filter(pk=chat.pk).update(status=Chat.Status.EXPIRED, closed_at=timezone.now())
    before = len(captured_events())
    run(chat_tasks.sweep_idle_chats)
    chat.refresh_from_db()
    assert chat.status == Chat.Status.ACTIVE and chat.closed_at is None
    assert captured_events()[before:] == []
    assert pushes == [([f"widget.{widget.pk}"], {"event": "chat", "chat_id": chat.pk, "status": "active"})]


# --- chat.transferred ---------------------------------------------------------------------------------------


def test_transfer_through_rest_counts_pushes_and_emits(api, widget, pushes, captured_events, run):
    old, new = AgentFactory(widget=widget), AgentFactory(widget=widget)
    chat = ChatFactory(contact=ContactFactory(widget=widget), agent=old)
    run(chat_services.accept_chat, widget=widget, chat=chat, agent=old)
    pushes.clear()
    before = len(captured_events())
    response = run(api().post, f"/api/v1/chats/{chat.pk}/transfer", {"agent_id": new.pk}, format="json", **idem())
    assert response.status_code == 202, response.content
    assert sorted(new_events(captured_events, before)) == ["chat.assigned", "chat.transferred"]
    assert agent_totals(widget, old)["transferred_out"] == 1
    assert agent_totals(widget, new)["transferred_in"] == 1
    assert ChatFacts.objects.get(chat=chat).owner_agent_id == new.pk
    assert pushes == [([f"widget.{widget.pk}"], {"event": "chat", "chat_id": chat.pk, "status": chat.status})]


# --- chat.accepted / chat.attributed (the console's explicit accept) ------------------------------------


def test_an_explicit_accept_pushes_the_chat_to_every_console_once(widget, pushes, captured_events, run):
    agent = AgentFactory(widget=widget)
    chat = ChatFactory(contact=ContactFactory(widget=widget), status=Chat.Status.ACTIVE)
    before = len(captured_events())
    run(chat_services.accept_chat, widget=widget, chat=chat, agent=agent)
    assert sorted(new_events(captured_events, before)) == ["chat.accepted", "chat.assigned"]
    assert pushes == [([f"widget.{widget.pk}"], {"event": "chat", "chat_id": chat.pk, "status": "active"})]


def test_taking_an_accepted_chat_pushes_it_and_accepting_again_pushes_nothing(widget, pushes, captured_events, run):
    first, second = AgentFactory(widget=widget), AgentFactory(widget=widget)
    chat = ChatFactory(contact=ContactFactory(widget=widget), status=Chat.Status.ACTIVE)
    run(chat_services.accept_chat, widget=widget, chat=chat, agent=first)
    pushes.clear()
    before = len(captured_events())
    run(chat_services.accept_chat, widget=widget, chat=chat, agent=second)
    assert new_events(captured_events, before) == []  # chat.attributed is internal: no webhook
    assert pushes == [([f"widget.{widget.pk}"], {"event": "chat", "chat_id": chat.pk, "status": "active"})]
    pushes.clear()
    run(chat_services.accept_chat, widget=widget, chat=chat, agent=second)
    assert pushes == []


# --- rating.created / rating.updated -------------------------------------------------------------------------


def test_rating_through_the_visitor_api_counts_and_emits_once(
    client, widget, visitor_token, pushes, captured_events, run
):
    visitor(client, widget, "messages", {"type": "text", "body": "Hello"}, visitor_token)
    chat = Chat.objects.get(widget=widget)
    before = len(captured_events())
    assert run(visitor, client, widget, "rating", {"value": 4}, visitor_token).status_code == 201
    assert new_events(captured_events, before) == ["rating.created"]
    assert widget_totals(widget)["rating_sum"] == 4 and widget_totals(widget)["rating_count"] == 1
    assert run(visitor, client, widget, "rating", {"value": 2}, visitor_token).status_code == 201
    assert new_events(captured_events, before) == ["rating.created"]  # a re-rating has no webhook
    assert widget_totals(widget)["rating_sum"] == 2 and widget_totals(widget)["rating_count"] == 1
    assert chat.pk


def test_rating_a_spam_chat_is_refused_by_the_service_for_every_entry_point(widget, captured_events):
    chat = ChatFactory(contact=ContactFactory(widget=widget), status=Chat.Status.SPAM)
    with pytest.raises(chat_services.ChatIsSpam):
        chat_services.rate_chat(widget=widget, chat=chat, value=5)
    assert captured_events() == []
    assert widget_totals(widget)["rating_count"] == 0


# --- rating request, typing, receipts (pushes only) ----------------------------------------------------------


def test_a_rating_request_through_rest_pushes_the_system_message(api, widget, pushes, captured_events, run):
    chat = _talked(widget, 1)
    before = len(captured_events())
    response = run(api().post, f"/api/v1/chats/{chat.pk}/rate-request", {}, format="json", **idem())
    assert response.status_code in (200, 201, 202), response.content
    assert captured_events()[before:] == []
    assert [frame["event"] for _, frame in pushes] == ["message"]
    assert pushes[0][0] == [f"widget.{widget.pk}", f"chat.{chat.pk}"]


def test_typing_through_rest_and_the_visitor_api_push_to_their_audiences(
    api, client, widget, visitor_token, pushes, run
):
    visitor(client, widget, "messages", {"type": "text", "body": "Hello"}, visitor_token)
    chat = Chat.objects.get(widget=widget)
    pushes.clear()
    assert run(visitor, client, widget, "typing", {"state": "stop"}, visitor_token).status_code == 202
    response = run(api().post, f"/api/v1/chats/{chat.pk}/typing", {"state": "stop"}, format="json", **idem())
    assert response.status_code == 202, response.content
    assert pushes == [
        ([f"widget.{widget.pk}"], {"event": "typing", "chat_id": chat.pk, "state": "stop", "by": "client"}),
        (
            [f"chat.{chat.pk}", f"widget.{widget.pk}"],
            {"event": "typing", "chat_id": chat.pk, "state": "stop", "by": "agent"},
        ),
    ]


def test_typing_and_receipts_into_a_spam_chat_are_refused_by_the_service(widget):
    chat = ChatFactory(contact=ContactFactory(widget=widget), status=Chat.Status.SPAM)
    message = MessageFactory(chat=chat)
    with pytest.raises(chat_services.ChatIsSpam):
        chat_services.note_typing(widget=widget, chat=chat, state="start", by="agent")
    with pytest.raises(chat_services.ChatIsSpam):
        chat_services.mark_seen(widget=widget, chat=chat, message=message, by="agent")


# --- contact.updated: the merged attributes limit holds for every entry point -------------------------------


def test_the_merged_attributes_limit_is_a_service_rule(widget, captured_events):
    from apps.core.errors import ValidationFailed

    contact = ContactFactory(widget=widget, attributes={"a": "x" * 9000})
    with pytest.raises(ValidationFailed) as raised:
        chat_services.update_contact(widget=widget, contact=contact, changes={"attributes": {"b": "y" * 9000}})
    assert "attributes" in raised.value.errors
    assert Contact.objects.get(pk=contact.pk).attributes == {"a": "x" * 9000}
    assert captured_events() == []
