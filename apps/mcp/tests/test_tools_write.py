"""The write tools through the official MCP client, against their REST twins: the effect read back
with the REST API, the same webhook events delivered to a real HTTPS receiver on loopback as when
the REST route makes the change, the same audit rows, a foreign id refused as a missing one, a bad
argument refused with the route's 422 `code` and `errors`, and the idempotency key acting as the
header does."""

from __future__ import annotations

import gc

import pytest
from django.db import connection

from apps.audit.models import AuditEntry
from apps.chats import services as chat_services
from apps.chats.models import Message
from apps.chats.tests.factories import AgentFactory, ChatFactory, ContactFactory, MessageFactory
from apps.webhooks import delivery as engine
from apps.webhooks import services as webhooks
from apps.webhooks.models import Delivery, EventSwitch
from apps.webhooks.tests.receiver import Receiver

from .tool_calls import call_tool, call_tools, rest_problem

pytestmark = pytest.mark.django_db(transaction=True)

_keys = iter(range(1_000_000))

# The members of an event's data that name the chat, message or contact it is about: they differ
# between the chat the REST route changed and the one the tool changed; every other member must match.
PER_CHAT = {"chat_id": "<chat>", "message_id": "<message>", "client_id": "<contact>", "client_guid": "<contact>"}


EVENTS = [
    "chat.accepted",
    "chat.assigned",
    "chat.closed",
    "chat.labels_changed",
    "chat.transferred",
    "contact.updated",
    "message.created",
]


def idem() -> dict:
    return {"HTTP_X_SERVICE_IDEMPOTENCY_KEY": f"w-{next(_keys)}"}


@pytest.fixture
def receiver(monkeypatch, settings):
    settings.OUTBOUND_ALLOW_LOOPBACK = True
    with Receiver() as rx:
        monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(rx.ca_path))
        yield rx
    gc.collect()  # the delivery pool's connections, before the test database is flushed


@pytest.fixture(autouse=True)
def _engine_inline(monkeypatch):
    """Deliveries go out when their change commits (the fan-out's hand-over) or from deliver_due
    called by the test; no Celery trigger, and on SQLite no pool threads."""
    monkeypatch.setattr(engine.sweep, "trigger", lambda countdown=None: None)
    if connection.vendor == "sqlite":
        send_new = engine.send_new
        monkeypatch.setattr(engine, "send_new", lambda rows, **kw: send_new(rows, **{**kw, "concurrency": 1}))


@pytest.fixture
def agent(widget):
    return AgentFactory(widget=widget)


def new_chat(widget, agent):
    chat = ChatFactory(contact=ContactFactory(widget=widget), agent=agent)
    MessageFactory(chat=chat, body="Hello, anyone there?")
    return chat


@pytest.fixture
def twins(widget, agent):
    """Two alike chats: the REST route changes the first, the tool the second."""
    return new_chat(widget, agent), new_chat(widget, agent)


@pytest.fixture
def hooks(widget, receiver):
    """`hooks()`: the events delivered since the last call, as (type, data) with the per-chat ids
    replaced (PER_CHAT), sorted."""
    # Every event type here is sent (some are off by default, WEBHOOK_LIVE_EVENTS): the platform's switch.
    EventSwitch.objects.bulk_create([EventSwitch(event_type=name, enabled=True) for name in EVENTS])
    webhooks.create_subscription(widget=widget, url=receiver.url("/hook"), events=EVENTS)
    seen = [0]

    def delivered() -> list[tuple[str, dict]]:
        webhooks.deliver_due(concurrency=1)
        hits = receiver.wait_for(Delivery.objects.count(), timeout=60)
        new, seen[0] = hits[seen[0] :], len(hits)
        bodies = [hit.json() for hit in new]
        return sorted(
            ((body["type"], {k: PER_CHAT.get(k, v) for k, v in body["data"].items()}) for body in bodies),
            key=repr,
        )

    return delivered


def same_as_rest(hooks, rest_events, rest_response, tool_outcome) -> list[tuple[str, dict]]:
    """The tool did what the route did: both succeeded, and the events delivered since the route's
    (`rest_events`, read before the tool was called) are the same."""
    assert rest_response.status_code < 300, rest_response.content
    assert not tool_outcome.is_error, tool_outcome.problem
    tool_events = hooks()
    assert tool_events == rest_events
    return tool_events


# --- send_message, add_private_note -----------------------------------------------------------------------


def test_send_message_sends_as_the_route_does(make_token, api, twins, hooks):
    rest_chat, tool_chat = twins
    client = api(scopes=["messages:write", "messages:read"])
    rest = client.post(
        f"/api/v1/chats/{rest_chat.pk}/messages", {"type": "text", "body": "Hi!"}, format="json", **idem()
    )
    rest_events = hooks()
    got = call_tool(
        make_token(scopes=["messages:write"]), "send_message", {"chat_id": tool_chat.pk, "type": "text", "body": "Hi!"}
    )
    events = same_as_rest(hooks, rest_events, rest, got)
    assert [kind for kind, _ in events] == ["chat.accepted", "message.created"]
    assert got.data["status"] == "accepted" and got.data["chat_id"] == tool_chat.pk
    [latest, *_] = client.get(f"/api/v1/chats/{tool_chat.pk}/messages").json()["data"]
    assert (latest["id"], latest["body"], latest["visibility"], latest["author"]["kind"]) == (
        got.data["id"],
        "Hi!",
        "public",
        "agent",
    )


def test_add_private_note_stores_a_note_as_the_route_does(make_token, api, twins, hooks):
    rest_chat, tool_chat = twins
    client = api(scopes=["messages:write", "messages:read", "chats:read"])
    note = {"type": "text", "body": "VIP, be kind", "visibility": "note"}
    rest = client.post(f"/api/v1/chats/{rest_chat.pk}/messages", note, format="json", **idem())
    rest_events = hooks()
    got = call_tool(
        make_token(scopes=["messages:write"]), "add_private_note", {"chat_id": tool_chat.pk, "body": "VIP, be kind"}
    )
    events = same_as_rest(hooks, rest_events, rest, got)
    assert [kind for kind, _ in events] == ["message.created"]
    [latest, *_] = client.get(f"/api/v1/chats/{tool_chat.pk}/messages").json()["data"]
    assert (latest["id"], latest["body"], latest["visibility"]) == (got.data["id"], "VIP, be kind", "note")
    assert client.get(f"/api/v1/chats/{tool_chat.pk}").json()["accepted_by"] is None


@pytest.mark.parametrize(
    ("name", "arguments", "body"),
    [
        ("send_message", {"type": "video", "body": "x"}, {"type": "video", "body": "x"}),
        ("send_message", {"type": "text"}, {"type": "text"}),
        (
            "send_message",
            {"type": "text", "body": "x", "agent_id": 10**9},
            {"type": "text", "body": "x", "agent_id": 10**9},
        ),
        ("add_private_note", {"body": "   "}, {"type": "text", "body": "   ", "visibility": "note"}),
    ],
)
def test_a_bad_message_is_the_routes_422_with_its_errors(make_token, api, twins, name, arguments, body):
    chat = twins[0]
    rest = api(scopes=["messages:write"]).post(f"/api/v1/chats/{chat.pk}/messages", body, format="json", **idem())
    got = call_tool(make_token(scopes=["messages:write"]), name, {"chat_id": chat.pk, **arguments})
    assert rest.status_code == 422 and got.is_error
    assert got.problem == rest_problem(rest) and got.problem["errors"]
    assert Message.objects.filter(chat=chat).count() == 1  # the visitor's, nothing added


def test_sending_to_another_widgets_chat_is_refused_as_a_missing_one(make_token, other_widget):
    foreign = ChatFactory(contact=ContactFactory(widget=other_widget), agent=AgentFactory(widget=other_widget))
    credential = make_token(scopes=["messages:write"])
    for name, extra in (("send_message", {"type": "text", "body": "x"}), ("add_private_note", {"body": "x"})):
        a, b = call_tools(
            credential, [(name, {"chat_id": foreign.pk, **extra}), (name, {"chat_id": foreign.pk + 99, **extra})]
        )
        assert a.is_error and a.problem == b.problem and a.problem["status"] == 404
    assert not Message.objects.filter(chat=foreign).exists()


def test_a_repeated_idempotency_key_is_the_routes_409_and_sends_once(make_token, twins):
    chat = twins[1]
    arguments = {"chat_id": chat.pk, "type": "text", "body": "Once", "idempotency_key": "send-once-1"}
    first, repeat = call_tools(make_token(scopes=["messages:write"]), [("send_message", arguments)] * 2)
    assert not first.is_error
    assert repeat.is_error and (repeat.problem["status"], repeat.problem["code"]) == (409, "idempotency_key_reused")
    assert repeat.problem["previous"]["status"] == 202
    assert Message.objects.filter(chat=chat, body="Once").count() == 1


def test_a_refused_call_does_not_burn_its_key(make_token, twins):
    chat = twins[1]
    credential = make_token(scopes=["messages:write"])
    refused, sent = call_tools(
        credential,
        [
            ("send_message", {"chat_id": chat.pk, "type": "text", "body": " ", "idempotency_key": "k-2"}),
            ("send_message", {"chat_id": chat.pk, "type": "text", "body": "Fixed", "idempotency_key": "k-2"}),
        ],
    )
    assert refused.is_error and refused.problem["status"] == 422
    assert not sent.is_error and Message.objects.filter(chat=chat, body="Fixed").count() == 1


def test_a_malformed_key_is_refused_as_the_route_refuses_its_header(make_token, api, twins):
    chat = twins[1]
    body = {"type": "text", "body": "x"}
    rest = api(scopes=["messages:write"]).post(
        f"/api/v1/chats/{chat.pk}/messages", body, format="json", HTTP_X_SERVICE_IDEMPOTENCY_KEY="two words"
    )
    got = call_tool(
        make_token(scopes=["messages:write"]),
        "send_message",
        {"chat_id": chat.pk, **body, "idempotency_key": "two words"},
    )
    assert rest.status_code >= 400 and got.is_error and got.problem == rest_problem(rest)
    assert Message.objects.filter(chat=chat).count() == 1


def test_without_a_key_each_call_is_a_new_message(make_token, twins):
    chat = twins[1]
    arguments = {"chat_id": chat.pk, "type": "text", "body": "Again"}
    call_tools(make_token(scopes=["messages:write"]), [("send_message", arguments), ("send_message", arguments)])
    assert Message.objects.filter(chat=chat, body="Again").count() == 2


# --- close_chat, assign_chat, set_chat_labels -------------------------------------------------------------


def test_close_chat_closes_as_the_route_does(make_token, api, twins, hooks):
    rest_chat, tool_chat = twins
    client = api(scopes=["chats:write", "chats:read"])
    rest = client.post(f"/api/v1/chats/{rest_chat.pk}/close", {"reason": "solved"}, format="json", **idem())
    rest_events = hooks()
    got = call_tool(make_token(scopes=["chats:write"]), "close_chat", {"chat_id": tool_chat.pk, "reason": "solved"})
    events = same_as_rest(hooks, rest_events, rest, got)
    assert [kind for kind, _ in events] == ["chat.closed"]
    assert got.data == client.get(f"/api/v1/chats/{tool_chat.pk}").json()
    assert got.data["status"] == "expired"


def test_assign_chat_transfers_as_the_route_does(make_token, api, widget, twins, hooks):
    rest_chat, tool_chat = twins
    other = AgentFactory(widget=widget)
    client = api(scopes=["chats:write", "chats:read"])
    rest = client.post(f"/api/v1/chats/{rest_chat.pk}/transfer", {"agent_id": other.pk}, format="json", **idem())
    rest_events = hooks()
    got = call_tool(make_token(scopes=["chats:write"]), "assign_chat", {"chat_id": tool_chat.pk, "agent_id": other.pk})
    events = same_as_rest(hooks, rest_events, rest, got)
    assert [kind for kind, _ in events] == ["chat.accepted", "chat.assigned", "chat.transferred"]
    assert got.data == rest.json()
    assert client.get(f"/api/v1/chats/{tool_chat.pk}").json()["agent_id"] == other.pk


def test_assigning_to_another_widgets_agent_is_refused_as_an_unknown_one(make_token, api, other_widget, twins):
    chat = twins[0]
    foreign_agent = AgentFactory(widget=other_widget)
    credential = make_token(scopes=["chats:write"])
    foreign, unknown = call_tools(
        credential,
        [
            ("assign_chat", {"chat_id": chat.pk, "agent_id": foreign_agent.pk}),
            ("assign_chat", {"chat_id": chat.pk, "agent_id": foreign_agent.pk + 99}),
        ],
    )
    rest = api(scopes=["chats:write"]).post(
        f"/api/v1/chats/{chat.pk}/transfer", {"agent_id": foreign_agent.pk}, format="json", **idem()
    )
    assert foreign.is_error and foreign.problem == rest_problem(rest) == unknown.problem
    assert foreign.problem["status"] == rest.status_code == 404


def test_set_chat_labels_replaces_them_as_the_route_does(make_token, api, widget, twins, hooks):
    rest_chat, tool_chat = twins
    chat_services.create_label(widget=widget, name="Billing")
    chat_services.create_label(widget=widget, name="VIP")
    client = api(scopes=["chats:write", "chats:read"])
    rest = client.put(f"/api/v1/chats/{rest_chat.pk}/labels", {"labels": ["vip", "billing"]}, format="json", **idem())
    rest_events = hooks()
    got = call_tool(
        make_token(scopes=["chats:write"]), "set_chat_labels", {"chat_id": tool_chat.pk, "labels": ["vip", "billing"]}
    )
    events = same_as_rest(hooks, rest_events, rest, got)
    assert [kind for kind, _ in events] == ["chat.labels_changed"]
    assert got.data == {"labels": ["Billing", "VIP"]}
    assert client.get(f"/api/v1/chats/{tool_chat.pk}/labels").json() == got.data


def test_an_unknown_label_is_the_routes_422_and_changes_nothing(make_token, api, twins):
    chat = twins[0]
    arguments = {"labels": ["nope"]}
    rest = api(scopes=["chats:write"]).put(f"/api/v1/chats/{chat.pk}/labels", arguments, format="json", **idem())
    got = call_tool(make_token(scopes=["chats:write"]), "set_chat_labels", {"chat_id": chat.pk, **arguments})
    assert rest.status_code == 422 and got.is_error and got.problem == rest_problem(rest)
    assert api(scopes=["chats:read"]).get(f"/api/v1/chats/{chat.pk}/labels").json() == {"labels": []}


@pytest.mark.parametrize(
    ("name", "extra"),
    [("close_chat", {}), ("assign_chat", {"agent_id": None}), ("set_chat_labels", {"labels": []})],
)
def test_a_chat_write_on_another_widgets_chat_is_refused_as_a_missing_one(make_token, other_widget, agent, name, extra):
    foreign = ChatFactory(contact=ContactFactory(widget=other_widget))
    arguments = {k: (agent.pk if v is None else v) for k, v in extra.items()}
    a, b = call_tools(
        make_token(scopes=["chats:write"]),
        [(name, {"chat_id": foreign.pk, **arguments}), (name, {"chat_id": foreign.pk + 99, **arguments})],
    )
    assert a.is_error and a.problem == b.problem and (a.problem["status"], a.problem["code"]) == (404, "not_found")
    foreign.refresh_from_db()
    assert foreign.status == "active" and foreign.agent_id is None


# --- update_contact_attributes ----------------------------------------------------------------------------


def test_update_contact_attributes_merges_as_the_route_does(make_token, api, twins, hooks):
    rest_chat, tool_chat = twins
    for chat in twins:
        chat_services.update_contact(
            widget=chat.widget, contact=chat.contact, changes={"attributes": {"plan": "free", "old": 1}}
        )
    hooks()
    change = {"attributes": {"plan": "pro", "old": None}}
    client = api(scopes=["contacts:write", "contacts:read"])
    rest = client.patch(f"/api/v1/contacts/{rest_chat.contact.guid}", change, format="json", **idem())
    rest_events = hooks()
    got = call_tool(
        make_token(scopes=["contacts:write"]),
        "update_contact_attributes",
        {"contact_id": tool_chat.contact.guid, **change},
    )
    events = same_as_rest(hooks, rest_events, rest, got)
    assert [kind for kind, _ in events] == ["contact.updated"]
    assert got.data["attributes"] == {"plan": "pro"}
    assert client.get(f"/api/v1/contacts/{tool_chat.contact.guid}").json() == got.data


def test_bad_attributes_are_the_routes_422(make_token, api, twins):
    guid = twins[0].contact.guid
    rest = api(scopes=["contacts:write"]).patch(
        f"/api/v1/contacts/{guid}", {"attributes": [1]}, format="json", **idem()
    )
    got = call_tool(
        make_token(scopes=["contacts:write"]), "update_contact_attributes", {"contact_id": guid, "attributes": [1]}
    )
    assert rest.status_code == 422 and got.is_error and got.problem == rest_problem(rest)
    assert got.problem["errors"]["attributes"]


def test_another_widgets_contact_is_refused_as_a_missing_one(make_token, other_widget):
    foreign = ContactFactory(widget=other_widget, attributes={"plan": "free"})
    a, b = call_tools(
        make_token(scopes=["contacts:write"]),
        [
            ("update_contact_attributes", {"contact_id": foreign.guid, "attributes": {"plan": "pro"}}),
            ("update_contact_attributes", {"contact_id": "0" * 32, "attributes": {"plan": "pro"}}),
        ],
    )
    assert a.is_error and a.problem == b.problem and a.problem["status"] == 404
    foreign.refresh_from_db()
    assert foreign.attributes == {"plan": "free"}


# --- audit and scopes -------------------------------------------------------------------------------------


def test_the_write_tools_leave_the_audit_rows_their_routes_leave(make_token, api, widget, agent):
    chat_services.create_label(widget=widget, name="VIP")
    rest_chat, tool_chat = new_chat(widget, agent), new_chat(widget, agent)
    steps = [
        ("send_message", "post", "messages", {"type": "text", "body": "Hi"}, {"type": "text", "body": "Hi"}),
        ("add_private_note", "post", "messages", {"type": "text", "body": "n", "visibility": "note"}, {"body": "n"}),
        ("set_chat_labels", "put", "labels", {"labels": ["VIP"]}, {"labels": ["VIP"]}),
        ("close_chat", "post", "close", {}, {}),
    ]
    client, credential = api(), make_token()
    for name, method, route, body, arguments in steps:
        before = AuditEntry.objects.count()
        response = getattr(client, method)(f"/api/v1/chats/{rest_chat.pk}/{route}", body, format="json", **idem())
        assert response.status_code < 300, response.content
        rest_rows = list(AuditEntry.objects.order_by("pk").values_list("action", "actor_type")[before:])
        before = AuditEntry.objects.count()
        assert not call_tool(credential, name, {"chat_id": tool_chat.pk, **arguments}).is_error
        tool_rows = list(AuditEntry.objects.order_by("pk").values_list("action", "actor_type")[before:])
        assert tool_rows == rest_rows, name


def test_a_tools_write_acts_as_its_token_for_the_audit(make_token, widget, twins, monkeypatch):
    """The services of these routes write no audit row (the audited writes are settings, tokens and
    the like), so the actor an audited write would record is read where the service runs."""
    from apps.audit import services as audit
    from apps.core.models import ApiToken

    actors = []
    close_chat = chat_services.close_chat

    def observed(**kwargs):
        actors.append(audit.current_actor())
        return close_chat(**kwargs)

    monkeypatch.setattr(chat_services, "close_chat", observed)
    credential = make_token(scopes=["chats:write"], name="Support assistant")
    assert not call_tool(credential, "close_chat", {"chat_id": twins[1].pk}).is_error
    token = ApiToken.objects.get(widget=widget, name="Support assistant")
    assert actors == [audit.Actor(AuditEntry.ActorType.TOKEN, str(token.pk), "Support assistant")]


def test_a_write_tool_needs_its_routes_scope(make_token, twins):
    chat = twins[0]
    refused = call_tool(
        make_token(scopes=["chats:read", "messages:read"]),
        "send_message",
        {"chat_id": chat.pk, "type": "text", "body": "x"},
    )
    assert refused.is_error
    assert (refused.problem["status"], refused.problem["code"]) == (403, "missing_scope")
    assert refused.problem["required_scopes"] == ["messages:write"]
    assert Message.objects.filter(chat=chat).count() == 1
