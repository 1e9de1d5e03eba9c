"""`POST /v1/ai/replies`: the scope order (403 before the causation is read), 404 for unknown and
foreign causations alike, 409 for a mismatched binding without consuming, consumed once, posting as
the operator, and every hand-off path (escalate, the marker, empty content)."""

from __future__ import annotations

import uuid

import pytest
from django.utils import timezone

from apps.ai import routing
from apps.chats.models import Chat, Message
from apps.external import services
from apps.external.models import Call
from tests.support.plugin import assert_problem

from .factories import SECRET, make_operator, visitor_message

pytestmark = pytest.mark.django_db

URL = "/api/v1/ai/replies"
INJECT = ["responder:inject"]
ESCALATE = ["responder:inject", "responder:escalate"]


@pytest.fixture
def call(widget, triggers) -> Call:
    operator = make_operator(widget)
    message = visitor_message(widget, "Do you ship to Mars?")
    assert services.dispatch_visitor_message(chat=message.chat, message=message)
    return Call.objects.get(operator=operator, message=message)


def reply(client, call: Call, **body):
    payload = {"room_id": call.chat_id, "causation_id": str(call.causation_id), **body}
    return client.post(URL, payload, format="json")


def consumed(call: Call) -> bool:
    return Call.objects.get(pk=call.pk).consumed_at is not None


def test_a_reply_is_posted_as_the_operator_and_consumes_the_call(api, call, captured_events):
    response = reply(api(scopes=INJECT), call, content="Your order ships today.")
    assert response.status_code == 202
    body = response.json()
    assert body["outcome"] == "posted" and body["room_id"] == call.chat_id
    message = Message.objects.get(pk=body["message_id"])
    assert message.agent_id == call.operator.agent_id and message.body == "Your order ships today."
    assert message.visibility == Message.Visibility.PUBLIC and message.chat_id == call.chat_id
    assert consumed(call)
    assert ("message.created", message.pk) in [(t, d.get("message_id")) for t, d in captured_events()]


def test_a_second_reply_with_the_same_causation_is_409(api, call):
    client = api(scopes=INJECT)
    assert reply(client, call, content="one").status_code == 202
    assert_problem(reply(client, call, content="two"), 409, "causation_consumed")
    assert Message.objects.filter(chat_id=call.chat_id, agent_id=call.operator.agent_id).count() == 1


@pytest.mark.parametrize("body", [{"escalate": True, "content": "x"}, {"content": "over to you [KEY_TO_OPERATOR]"}])
def test_escalation_without_its_scope_is_403_before_the_causation_is_read(api, call, body):
    response = reply(api(scopes=INJECT), call, **body)
    assert_problem(response, 403, "escalation_scope_required")
    assert not consumed(call)
    # the same 403 for a causation that does not exist: nothing was looked up
    other = api(scopes=INJECT).post(URL, {"room_id": 1, "causation_id": str(uuid.uuid4()), **body}, format="json")
    assert_problem(other, 403, "escalation_scope_required")


@pytest.mark.parametrize(
    "body,reason",
    [
        ({"escalate": True}, "escalate"),
        ({"content": "[KEY_TO_OPERATOR]"}, "marker"),
        ({"content": "I can't help here. [KEY_TO_OPERATOR]", "escalate": False}, "marker"),
    ],
)
def test_escalation_with_its_scope_hands_the_chat_to_people(api, call, body, reason):
    response = reply(api(scopes=ESCALATE), call, **body)
    assert response.status_code == 202 and response.json()["outcome"] == "handed_off"
    chat = Chat.objects.get(pk=call.chat_id)
    assert chat.awaiting_human_since is not None
    assert consumed(call) and Call.objects.get(pk=call.pk).outcome == "handed_off"
    # the hand-over phrase is the operator's message, never the marker
    assert not Message.objects.filter(chat=chat, body__contains="[KEY_TO_OPERATOR]").exists()


@pytest.mark.parametrize("content", ["", "   ", None])
def test_empty_content_hands_off_with_the_base_scope(api, call, content):
    body = {} if content is None else {"content": content}
    response = reply(api(scopes=INJECT), call, **body)
    assert response.status_code == 202 and response.json()["outcome"] == "handed_off"
    assert Chat.objects.get(pk=call.chat_id).awaiting_human_since is not None


def test_only_the_exact_marker_escalates(api, call):
    response = reply(api(scopes=INJECT), call, content="[key_to_operator] is not the marker")
    assert response.status_code == 202 and response.json()["outcome"] == "posted"


def test_unknown_foreign_and_malformed_causations_are_the_same_404(api, call, other_widget, triggers):
    foreign_operator = make_operator(other_widget)
    foreign_message = visitor_message(other_widget)
    services.dispatch_visitor_message(chat=foreign_message.chat, message=foreign_message)
    foreign = Call.objects.get(operator=foreign_operator)
    client = api(scopes=INJECT)
    bodies = [
        {"room_id": call.chat_id, "causation_id": str(uuid.uuid4()), "content": "x"},
        {"room_id": foreign.chat_id, "causation_id": str(foreign.causation_id), "content": "x"},
        {"room_id": call.chat_id, "causation_id": "not-a-uuid", "content": "x"},
    ]
    problems = [assert_problem(client.post(URL, b, format="json"), 404, "causation_not_found") for b in bodies]
    assert len({(p["title"], p["detail"]) for p in problems}) == 1
    assert not consumed(foreign)


def test_another_room_is_409_and_does_not_consume(api, call, widget):
    client = api(scopes=INJECT)
    other_chat = visitor_message(widget).chat
    response = client.post(
        URL, {"room_id": other_chat.pk, "causation_id": str(call.causation_id), "content": "x"}, format="json"
    )
    assert_problem(response, 409, "binding_mismatch")
    assert not consumed(call)
    assert reply(client, call, content="right room").status_code == 202


def test_a_revoked_operators_reply_is_409_and_does_not_consume(api, call, widget):
    services.set_lifecycle(widget=widget, operator=call.operator, state="revoked")
    assert_problem(reply(api(scopes=INJECT), call, content="late"), 409, "binding_mismatch")
    assert not consumed(call)


@pytest.mark.parametrize("route", ["suspend", "delete"])
def test_an_operator_whose_agent_was_suspended_through_the_agents_api_stops_answering(api, call, widget, route):
    # given the operator's agent suspended, or deleted, through the agents routes
    agents = api(scopes=["agents:write"])
    path = f"/api/v1/agents/{call.operator.agent_id}"
    key = {"HTTP_X_SERVICE_IDEMPOTENCY_KEY": f"suspend-{route}"}
    response = agents.post(f"{path}/suspend", {}, format="json", **key) if route == "suspend" else agents.delete(path)
    assert response.status_code in (200, 204)
    # then its reply is refused without consuming the call, and the visitor's next message is not sent
    assert_problem(reply(api(scopes=INJECT), call, content="still here"), 409, "binding_mismatch")
    assert not consumed(call)
    assert not Message.objects.filter(chat_id=call.chat_id, agent_id=call.operator.agent_id).exists()
    later = visitor_message(widget, chat=call.chat)
    assert services.dispatch_visitor_message(chat=later.chat, message=later) is False
    assert not Call.objects.filter(message=later).exists()
    # and restoring the agent gives the operator its calls back
    restored = agents.post(f"{path}/restore", {}, format="json", HTTP_X_SERVICE_IDEMPOTENCY_KEY=f"restore-{route}")
    assert restored.status_code == 200
    assert reply(api(scopes=INJECT), call, content="back").json()["outcome"] == "posted"


def test_when_a_person_took_the_chat_the_reply_is_discarded(api, call):
    Chat.objects.filter(pk=call.chat_id).update(awaiting_human_since=timezone.now())
    response = reply(api(scopes=INJECT), call, content="too late")
    assert response.status_code == 202 and response.json() == {
        "outcome": "discarded",
        "message_id": None,
        "room_id": call.chat_id,
    }
    assert not Message.objects.filter(chat_id=call.chat_id, agent_id=call.operator.agent_id).exists()


@pytest.mark.parametrize(
    "body,field",
    [
        ({"causation_id": "x"}, "room_id"),
        ({"room_id": "abc", "causation_id": "x"}, "room_id"),
        ({"room_id": 1}, "causation_id"),
        ({"room_id": 1, "causation_id": 5}, "causation_id"),
        ({"room_id": 1, "causation_id": "x", "content": 5}, "content"),
        ({"room_id": 1, "causation_id": "x", "content": "x" * 65537}, "content"),
        ({"room_id": 1, "causation_id": "x", "operator": 1}, "operator"),
    ],
)
def test_bad_bodies_are_422(api, call, body, field):
    problem = assert_problem(api(scopes=ESCALATE).post(URL, body, format="json"), 422)
    assert field in problem["errors"]
    assert not consumed(call)


def test_authentication_and_the_base_scope(api, call, client):
    assert_problem(client.post(URL, {}, format="json"), 401)
    assert_problem(reply(api(scopes=["responder:escalate", "agents:write"]), call, content="x"), 403, "missing_scope")
    assert not consumed(call)


def test_the_ai_worker_offers_visitor_messages_to_the_external_operators(widget, triggers):
    # given a widget with an active external operator
    operator = make_operator(widget)
    message = visitor_message(widget)
    # when the AI runtime's routing offers the message
    assert routing.dispatch_to_external(message.chat, message) is True
    # then the operator got a call, and a widget without one is left to the built-in AI
    assert Call.objects.filter(operator=operator, message=message).exists()
    services.set_lifecycle(widget=widget, operator=operator, state="paused")
    later = visitor_message(widget, chat=message.chat)
    assert routing.dispatch_to_external(later.chat, later) is False


def test_no_call_while_a_person_holds_the_chat(widget, triggers):
    make_operator(widget)
    message = visitor_message(widget)
    Chat.objects.filter(pk=message.chat_id).update(awaiting_human_since=timezone.now())
    message.chat.refresh_from_db()
    assert services.dispatch_visitor_message(chat=message.chat, message=message) is True  # theirs, not the AI's
    assert not Call.objects.exists()


def test_the_operators_first_reply_accepts_the_chat_as_a_machine(api, call, captured_events):
    reply(api(scopes=INJECT), call, content="Hello!")
    chat = Chat.objects.get(pk=call.chat_id)
    assert (chat.accepted_by_id, chat.accepted_by_type) == (call.operator.agent_id, "ai")
    assert chat.handling == "ai" and chat.agent_id is None  # a machine never becomes the routing owner
    accepted = [d for t, d in captured_events() if t == "chat.accepted"]
    assert accepted and accepted[0]["operator_type"] == "ai" and accepted[0]["operator_id"] == call.operator.agent_id


# --- platform safety floors (apps.ai.reply_safety): base scope, never posted, handed to people ------------------


@pytest.mark.parametrize(
    ("content", "floor"),
    [
        ("Here is our key: sk-proj-abcdefghijklmnopqrstuvwxyz0123", "secret"),
        ("Use whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw= to verify", "secret"),
        (f"My secret is {SECRET}", "secret"),
    ],
)
def test_a_reply_tripping_a_floor_hands_off_with_the_base_scope(api, call, content, floor):
    from apps.ai.models import DemandSignal

    response = reply(api(scopes=INJECT), call, content=content)
    assert response.status_code == 202 and response.json() == {**response.json(), "outcome": "handed_off"}
    chat = Chat.objects.get(pk=call.chat_id)
    assert chat.awaiting_human_since is not None
    assert not Message.objects.filter(chat=chat, body=content).exists()
    assert consumed(call) and Call.objects.get(pk=call.pk).outcome == "handed_off"
    # the demand signal names the floor's category (a leaked secret is `safety`)
    assert list(DemandSignal.objects.filter(widget=call.widget).values_list("category", flat=True)) == ["safety"]


def test_the_operators_own_signing_secret_verbatim_is_a_floor(api, call, widget):
    # not shaped like a known key format: only the operator's own secrets can catch it
    services.rotate_operator_secret(widget=widget, operator=call.operator, secret="plain-words-secret-1234")
    response = reply(api(scopes=INJECT), call, content="Sign with plain-words-secret-1234 please")
    assert response.json()["outcome"] == "handed_off"
    assert not Message.objects.filter(chat_id=call.chat_id, body__contains="plain-words").exists()


def test_a_visitor_asking_for_a_person_is_handed_over_whatever_the_operator_says(api, widget, triggers):
    from apps.ai.models import DemandSignal

    operator = make_operator(widget)
    message = visitor_message(widget, "Can I talk to a real person please?")
    assert services.dispatch_visitor_message(chat=message.chat, message=message)
    call = Call.objects.get(operator=operator, message=message)
    response = reply(api(scopes=INJECT), call, content="I am a bot, but I can help!")
    assert response.status_code == 202 and response.json()["outcome"] == "handed_off"
    assert not Message.objects.filter(chat_id=call.chat_id, body="I am a bot, but I can help!").exists()
    [signal] = DemandSignal.objects.filter(widget=widget)
    assert (signal.category, signal.topic) == ("escalation", "can i talk to a real person please?")
