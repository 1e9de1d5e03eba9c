"""GET/POST /v1/chats/{id}/messages, typing, seen; attribution as messages arrive."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.agents.models import Agent
from apps.chats import services
from apps.chats.models import Chat, Message
from apps.chats.tests.factories import AgentFactory, ChatFactory, ContactFactory, MessageFactory
from tests.support.plugin import assert_problem

pytestmark = pytest.mark.django_db

_keys = iter(range(1_000_000))


def idem():
    return {"HTTP_X_SERVICE_IDEMPOTENCY_KEY": f"m-{next(_keys)}"}


@pytest.fixture
def agent(widget):
    return AgentFactory(widget=widget)


@pytest.fixture
def chat(widget, agent):
    return ChatFactory(contact=ContactFactory(widget=widget), agent=agent)


def send(client, chat, body, **extra):
    return client.post(f"/api/v1/chats/{chat.pk}/messages", body, format="json", **{**idem(), **extra})


BUTTON = {"label": "Open", "url": "https://example.com/x"}


# --- send ------------------------------------------------------------------------------------------


def test_send_text_is_202_and_stored(api, chat, captured_events):
    response = send(api(scopes=["messages:write"]), chat, {"type": "text", "body": "Hello"})
    assert response.status_code == 202
    message = Message.objects.get(pk=response.json()["id"])
    assert message.body == "Hello" and message.author_kind == "agent" and message.agent_id == chat.agent_id
    assert captured_events()[-1] == (
        "message.created",
        {
            "chat_id": chat.pk,
            "message_id": message.pk,
            "client_id": chat.contact.guid,
            "author_type": "OPERATOR",
            "source": "api",
            "button_guid": chat.widget.button_guid,
        },
    )


def test_first_reply_accepts_an_unanswered_chat_once(api, chat, captured_events):
    client = api()
    send(client, chat, {"type": "text", "body": "one"})
    send(client, chat, {"type": "text", "body": "two"})
    accepted = [d for t, d in captured_events() if t == "chat.accepted"]
    assert accepted == [
        {
            "chat_id": chat.pk,
            "operator_id": chat.agent_id,
            "operator_type": "human",
            "client_id": chat.contact.guid,
            "button_guid": chat.widget.button_guid,
        }
    ]
    chat.refresh_from_db()
    assert chat.accepted_by_id == chat.agent_id and chat.handling == "human" and chat.accepted_at is not None


def test_message_into_expired_chat_is_stored_there_and_reopens_it(api, chat):
    chat.status = Chat.Status.EXPIRED
    chat.save()
    response = send(api(), chat, {"type": "text", "body": "Back?"})
    assert response.status_code == 202 and response.json()["chat_id"] == chat.pk
    chat.refresh_from_db()
    assert chat.status == "active" and chat.last_message_id == response.json()["id"]


def test_message_into_spam_chat_is_409(api, chat):
    chat.status = Chat.Status.SPAM
    chat.save()
    assert_problem(send(api(), chat, {"type": "text", "body": "x"}), 409)
    assert not Message.objects.filter(chat=chat).exists()


def test_agent_id_required_without_assigned_agent(api, widget):
    chat = ChatFactory(contact=ContactFactory(widget=widget))
    body = assert_problem(send(api(), chat, {"type": "text", "body": "x"}), 422)
    assert list(body["errors"]) == ["agent_id"]


def test_agent_id_claims_the_unassigned_chat(api, widget, agent):
    chat = ChatFactory(contact=ContactFactory(widget=widget))
    assert send(api(), chat, {"type": "text", "body": "x", "agent_id": agent.pk}).status_code == 202
    chat.refresh_from_db()
    assert chat.agent_id == agent.pk


def test_agent_id_must_be_human_never_the_ai_operator(api, widget):
    chat = ChatFactory(contact=ContactFactory(widget=widget))
    bot = AgentFactory(widget=widget, type=Agent.Type.AI)
    body = assert_problem(send(api(), chat, {"type": "text", "body": "x", "agent_id": bot.pk}), 422)
    assert list(body["errors"]) == ["agent_id"]


def test_foreign_agent_id_is_422_like_an_unknown_one(api, widget, other_widget):
    chat = ChatFactory(contact=ContactFactory(widget=widget))
    foreign = AgentFactory(widget=other_widget)
    a = assert_problem(send(api(), chat, {"type": "text", "body": "x", "agent_id": foreign.pk}), 422)
    b = assert_problem(send(api(), chat, {"type": "text", "body": "x", "agent_id": 10**9}), 422)
    assert a["errors"] == b["errors"]


def test_send_into_foreign_chat_is_404(api, other_widget):
    foreign = ChatFactory(contact=ContactFactory(widget=other_widget), agent=AgentFactory(widget=other_widget))
    assert_problem(send(api(), foreign, {"type": "text", "body": "x"}), 404)


def test_send_reads_its_chat_once_locked(api, chat):
    # given a client that sent once (statements compiled)
    client = api()
    send(client, chat, {"type": "text", "body": "first"})
    # when it sends again
    with CaptureQueriesContext(connection) as ctx:
        assert send(client, chat, {"type": "text", "body": "second"}).status_code == 202
    # then the chat is read by one statement, the lock the service writes under
    chat_reads = [
        q["sql"] for q in ctx.captured_queries if q["sql"].startswith("SELECT") and 'FROM "chats_chat"' in q["sql"]
    ]
    assert len(chat_reads) == 1
    if connection.features.has_select_for_update:
        assert 'FOR UPDATE OF "chats_chat"' in chat_reads[0]


@pytest.mark.django_db(transaction=True)
def test_send_writes_in_the_requests_one_transaction(api, chat):
    # given a client that sent once (statements compiled)
    client = api()
    send(client, chat, {"type": "text", "body": "first"})
    # when it sends again
    with CaptureQueriesContext(connection) as ctx:
        assert send(client, chat, {"type": "text", "body": "second"}).status_code == 202
    # then the message is written in the transaction that claimed the key and locked the chat,
    # with no savepoint of its own
    assert not [q["sql"] for q in ctx.captured_queries if "SAVEPOINT" in q["sql"].upper()]
    assert Message.objects.filter(chat=chat, body="second").count() == 1


def test_a_send_into_a_spam_chat_is_409_and_leaves_the_key_free(api, chat):
    # given a spam chat
    Chat.objects.filter(pk=chat.pk).update(status=Chat.Status.SPAM)
    client = api()
    headers = idem()
    # when an operator writes into it
    response = send(client, chat, {"type": "text", "body": "x"}, **headers)
    # then it is refused, nothing is stored, and the key was not spent on the refusal
    assert_problem(response, 409)
    assert not Message.objects.filter(chat=chat, body="x").exists()
    Chat.objects.filter(pk=chat.pk).update(status=Chat.Status.ACTIVE)
    assert send(client, chat, {"type": "text", "body": "x"}, **headers).status_code == 202
    assert Message.objects.filter(chat=chat, body="x").count() == 1


@pytest.mark.parametrize("key", ["abc", "0x10", str(2**63), "-1"])
def test_send_to_a_key_that_is_no_chat_id_is_404(api, key):
    response = api().post(f"/api/v1/chats/{key}/messages", {"type": "text", "body": "x"}, format="json", **idem())
    assert_problem(response, 404)
    assert not Message.objects.filter(body="x").exists()


def test_send_needs_messages_write(api, chat):
    assert_problem(send(api(scopes=["messages:read", "chats:write"]), chat, {"type": "text", "body": "x"}), 403)


def test_send_needs_idempotency_key(api, chat):
    response = api().post(f"/api/v1/chats/{chat.pk}/messages", {"type": "text", "body": "x"}, format="json")
    assert_problem(response, 400, "idempotency_key_missing")


@pytest.mark.parametrize(
    ("payload", "path"),
    [
        ({"type": "text"}, "body"),
        ({"type": "text", "body": "   "}, "body"),
        ({"type": "video", "body": "x"}, "type"),
        ({"type": "image"}, "file"),
        ({"type": "location"}, "coords"),
        ({"type": "location", "coords": {"latitude": 91, "longitude": 0}}, "coords.latitude"),
        ({"type": "text", "body": "x", "keyboard": {"buttons": [BUTTON]}}, "keyboard"),
        ({"type": "text", "body": "x", "sender": "me"}, "sender"),
    ],
)
def test_invalid_message_is_422_at_its_path(api, chat, payload, path):
    body = assert_problem(send(api(), chat, payload), 422)
    assert path in body["errors"], body["errors"]


def test_a_note_is_stored_for_operators_and_does_not_accept_the_chat(api, chat, captured_events):
    response = send(api(scopes=["messages:write"]), chat, {"type": "text", "body": "Call back", "visibility": "note"})
    assert response.status_code == 202
    message = Message.objects.get(pk=response.json()["id"])
    assert (message.visibility, message.body, message.agent_id) == ("note", "Call back", chat.agent_id)
    chat.refresh_from_db()
    assert chat.accepted_by_id is None and chat.first_agent_reply_at is None
    assert [t for t, _ in captured_events()] == ["message.created"]
    listed = api(scopes=["messages:read"]).get(f"/api/v1/chats/{chat.pk}/messages").json()["data"]
    assert [(m["id"], m["visibility"]) for m in listed] == [(message.pk, "note")]


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        (
            {"type": "location", "coords": {"latitude": 1, "longitude": 2}, "visibility": "note"},
            "A note is a text message.",
        ),
        ({"type": "text", "body": "x", "visibility": "internal"}, '"internal" is not a valid choice.'),
    ],
)
def test_a_note_is_text_and_public_or_note_only(api, chat, payload, message):
    body = assert_problem(send(api(), chat, payload), 422)
    assert body["errors"] == {"visibility": [message]}
    assert not Message.objects.filter(chat=chat).exists()


# --- keyboard rules -------------------------------------------------------------------------------------


def test_keyboard_message_is_stored_and_read_back(api, chat):
    buttons = [BUTTON, {"label": "Docs", "url": "https://example.com/d", "style": "secondary"}]
    response = send(api(), chat, {"type": "keyboard", "body": "Pick one", "keyboard": {"buttons": buttons}})
    assert response.status_code == 202
    listed = api().get(f"/api/v1/chats/{chat.pk}/messages").json()["data"][0]
    assert listed["type"] == "keyboard"
    assert listed["keyboard"] == {"buttons": [{**BUTTON, "style": "primary"}, buttons[1]]}


def test_keyboard_requires_body(api, chat):
    body = assert_problem(send(api(), chat, {"type": "keyboard", "keyboard": {"buttons": [BUTTON]}}), 422)
    assert "body" in body["errors"]


def test_keyboard_at_most_seven_buttons(api, chat):
    assert (
        send(api(), chat, {"type": "keyboard", "body": "x", "keyboard": {"buttons": [BUTTON] * 7}}).status_code == 202
    )
    body = assert_problem(
        send(api(), chat, {"type": "keyboard", "body": "x", "keyboard": {"buttons": [BUTTON] * 8}}), 422
    )
    assert "keyboard.buttons" in body["errors"]


@pytest.mark.parametrize(
    ("button", "field"),
    [
        ({"label": "", "url": "https://a.example"}, "label"),
        ({"label": "x" * 65, "url": "https://a.example"}, "label"),
        ({"label": "ok", "url": "http://a.example"}, "url"),
        ({"label": "ok", "url": "javascript:alert(1)"}, "url"),
        ({"label": "ok", "url": "data:text/html,hi"}, "url"),
        ({"label": "ok", "url": "/relative"}, "url"),
        ({"label": "ok", "url": "https://user:pass@a.example"}, "url"),
        ({"label": "ok", "url": "https://user@a.example"}, "url"),
        ({"label": "ok", "url": "https://[::1"}, "url"),
        ({"label": "ok", "url": "https://a.example:99999/"}, "url"),
        ({"label": "ok", "url": "https://a.example", "style": "danger"}, "style"),
        ({"label": "ok", "url": "https://a.example", "color": "red"}, "color"),
    ],
)
def test_one_invalid_button_refuses_the_whole_request(api, chat, button, field):
    buttons = [BUTTON, BUTTON, BUTTON, button]
    body = assert_problem(send(api(), chat, {"type": "keyboard", "body": "x", "keyboard": {"buttons": buttons}}), 422)
    assert list(body["errors"]) == [f"keyboard.buttons.3.{field}"]
    assert not Message.objects.filter(chat=chat).exists()


def test_label_of_64_characters_is_fine(api, chat):
    button = {"label": "я" * 64, "url": "https://a.example"}
    assert send(api(), chat, {"type": "keyboard", "body": "x", "keyboard": {"buttons": [button]}}).status_code == 202


# --- list ------------------------------------------------------------------------------------------------


def test_message_list_newest_first_with_cursor(api, chat):
    messages = [MessageFactory(chat=chat) for _ in range(5)]
    client = api(scopes=["messages:read"])
    page = client.get(f"/api/v1/chats/{chat.pk}/messages", {"limit": 3}).json()
    assert [m["id"] for m in page["data"]] == [m.pk for m in reversed(messages)][:3]
    rest = client.get(f"/api/v1/chats/{chat.pk}/messages", {"cursor": page["next_cursor"]}).json()
    assert [m["id"] for m in rest["data"]] == [messages[1].pk, messages[0].pk]


def test_message_list_of_foreign_chat_is_404(api, other_widget):
    foreign = ChatFactory(contact=ContactFactory(widget=other_widget))
    assert_problem(api().get(f"/api/v1/chats/{foreign.pk}/messages"), 404)


def test_message_list_needs_messages_read(api, chat):
    assert_problem(api(scopes=["chats:read"]).get(f"/api/v1/chats/{chat.pk}/messages"), 403, "missing_scope")


def test_message_list_from_to(api, chat):
    from datetime import datetime
    from zoneinfo import ZoneInfo

    msk = ZoneInfo("Europe/Moscow")
    MessageFactory(chat=chat, created_at=datetime(2026, 5, 1, 23, 0, tzinfo=msk))
    inside = MessageFactory(chat=chat, created_at=datetime(2026, 5, 2, 10, 0, tzinfo=msk))
    data = api().get(f"/api/v1/chats/{chat.pk}/messages", {"from": "2026-05-02", "to": "2026-05-03"}).json()["data"]
    assert [m["id"] for m in data] == [inside.pk]


def test_message_list_query_count_does_not_grow(api, chat):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client = api()
    MessageFactory(chat=chat)
    client.get(f"/api/v1/chats/{chat.pk}/messages")

    def count():
        with CaptureQueriesContext(connection) as ctx:
            client.get(f"/api/v1/chats/{chat.pk}/messages", {"limit": 100})
        return len(ctx.captured_queries)

    one = count()
    for _ in range(20):
        MessageFactory(chat=chat)
    assert count() == one


# --- typing and seen ---------------------------------------------------------------------------------------


def test_typing_is_202_and_coalesced_about_once_per_5_seconds(api, chat):
    client = api()
    first = client.post(f"/api/v1/chats/{chat.pk}/typing", {"state": "start"}, format="json", **idem())
    second = client.post(f"/api/v1/chats/{chat.pk}/typing", {"state": "start"}, format="json", **idem())
    stop = client.post(f"/api/v1/chats/{chat.pk}/typing", {"state": "stop"}, format="json", **idem())
    assert (first.status_code, second.status_code, stop.status_code) == (202, 202, 202)
    assert (first.json()["forwarded"], second.json()["forwarded"], stop.json()["forwarded"]) == (True, False, True)


def test_typing_state_is_validated(api, chat):
    body = assert_problem(api().post(f"/api/v1/chats/{chat.pk}/typing", {"state": "go"}, format="json", **idem()), 422)
    assert "state" in body["errors"]


def test_seen_marks_visitor_messages_up_to_the_id(api, chat):
    first, second = MessageFactory(chat=chat), MessageFactory(chat=chat)
    later = MessageFactory(chat=chat)
    response = api().post(f"/api/v1/chats/{chat.pk}/seen", {"message_id": second.pk}, format="json", **idem())
    assert response.status_code == 200 and response.json()["marked"] == 2
    seen = dict(Message.objects.values_list("pk", "seen_at"))
    assert seen[first.pk] and seen[second.pk] and seen[later.pk] is None


def test_seen_of_a_message_of_another_chat_is_422(api, widget, chat):
    other = MessageFactory(chat=ChatFactory(contact=ContactFactory(widget=widget)))
    body = assert_problem(
        api().post(f"/api/v1/chats/{chat.pk}/seen", {"message_id": other.pk}, format="json", **idem()), 422
    )
    assert "message_id" in body["errors"]


# --- attribution (service level) -----------------------------------------------------------------------------


def test_ai_then_human_is_ai_to_human(widget):
    chat = ChatFactory(contact=ContactFactory(widget=widget))
    bot = AgentFactory(widget=widget, type=Agent.Type.AI)
    person = AgentFactory(widget=widget)
    services.post_agent_message(widget=widget, chat=chat, agent=bot, data=services.MessageInput(body="hi"), source="ai")
    chat.refresh_from_db()
    assert (chat.accepted_by_type, chat.handling, chat.agent_id) == ("ai", "ai", None)
    services.post_agent_message(widget=widget, chat=chat, agent=person, data=services.MessageInput(body="me"))
    chat.refresh_from_db()
    assert chat.handling == "ai_to_human" and chat.handled_by_id == person.pk and chat.accepted_by_id == bot.pk


def test_human_then_ai_is_human_to_ai(widget):
    chat = ChatFactory(contact=ContactFactory(widget=widget))
    person = AgentFactory(widget=widget)
    bot = AgentFactory(widget=widget, type=Agent.Type.AI)
    services.accept_chat(widget=widget, chat=chat, agent=person)
    services.post_agent_message(widget=widget, chat=chat, agent=bot, data=services.MessageInput(body="hi"), source="ai")
    chat.refresh_from_db()
    assert chat.handling == "human_to_ai" and chat.handled_by_type == "ai" and chat.agent_id == person.pk


def test_private_note_never_accepts(widget, captured_events):
    chat = ChatFactory(contact=ContactFactory(widget=widget))
    person = AgentFactory(widget=widget)
    services.post_agent_message(
        widget=widget, chat=chat, agent=person, data=services.MessageInput(body="n", visibility="note")
    )
    chat.refresh_from_db()
    assert chat.handling == "missed" and not chat.accepted_by_type
    assert "chat.accepted" not in [t for t, _ in captured_events()]


def test_rating_goes_to_the_handler_and_emits_once(widget, captured_events):
    chat = ChatFactory(contact=ContactFactory(widget=widget))
    person = AgentFactory(widget=widget)
    services.accept_chat(widget=widget, chat=chat, agent=person)
    first = services.rate_chat(widget=widget, chat=chat, value=4)
    second = services.rate_chat(widget=widget, chat=chat, value=5)
    assert first.pk == second.pk and second.agent_id == person.pk and second.value == 5
    rated = [d for t, d in captured_events() if t == "rating.created"]
    assert rated == [
        {
            "chat_client_id": chat.contact.guid,
            "operator_id": person.pk,
            "author_type": "USER",
            "source": "visitor",
            "button_guid": widget.button_guid,
        }
    ]
