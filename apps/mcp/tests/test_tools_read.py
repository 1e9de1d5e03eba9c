"""The read tools and the transcript resource through the official MCP client: each answers what its
REST twin answers for the same request, refuses what it refuses with the same problem, and is listed
only for a token holding its routes' scopes."""

from __future__ import annotations

import pytest
from mcp.shared.exceptions import MCPError

from apps.agents.models import Agent
from apps.canned import services as canned_services
from apps.chats import services as chat_services
from apps.chats.tests.factories import AgentFactory, ChatFactory, ContactFactory, MessageFactory
from apps.mcp import registry, schemas
from tests.support.plugin import ALL

from .tool_calls import call_tool, listed_tools, read_resource, resource_templates, rest_problem, tool_names

pytestmark = pytest.mark.django_db(transaction=True)

READ_ONLY = ["chats:read", "transcripts:read", "contacts:read", "canned:read", "kb:read", "stats:read"]


@pytest.fixture
def agent(widget):
    return AgentFactory(widget=widget, type=Agent.Type.HUMAN)


@pytest.fixture
def chat(widget, agent):
    chat = ChatFactory(contact=ContactFactory(widget=widget, name="Ada Lovelace"), agent=agent)
    MessageFactory(chat=chat, body="Where is my order 42?")
    return chat


@pytest.fixture
def foreign_chat(other_widget):
    return ChatFactory(contact=ContactFactory(widget=other_widget))


def assert_same_refusal(credential, name, foreign_args, missing_args, status=404):
    foreign = call_tool(credential, name, foreign_args)
    missing = call_tool(credential, name, missing_args)
    assert foreign.is_error and missing.is_error
    assert foreign.problem == missing.problem
    assert (foreign.problem["status"], foreign.problem["code"]) == (status, "not_found")


# --- listing by scope -------------------------------------------------------------------------------------


def test_a_read_only_token_is_offered_exactly_the_read_tools(make_token):
    names = tool_names(make_token(scopes=READ_ONLY))
    assert names == [
        "get_chat",
        "get_contact",
        "get_statistics",
        "list_canned_responses",
        "list_chats",
        "render_canned_response",
        "search_contacts",
        "search_knowledge_base",
    ]


def test_a_full_token_is_offered_all_fifteen_tools(make_token):
    assert tool_names(make_token(scopes=ALL)) == sorted(registry.tools())
    assert len(registry.tools()) == 15


def test_a_tool_needs_the_scopes_of_every_route_it_calls(make_token, chat):
    # get_chat reads the chat (chats:read) and its transcript (transcripts:read)
    narrow = make_token(scopes=["chats:read"])
    assert "get_chat" not in tool_names(narrow)
    assert "list_chats" in tool_names(narrow)
    refused = call_tool(narrow, "get_chat", {"chat_id": chat.pk})
    assert refused.is_error and refused.problem["code"] == "missing_scope"
    assert call_tool(make_token(scopes=["chats:read", "transcripts:read"]), "get_chat", {"chat_id": chat.pk}).data


def test_rendering_needs_chats_read_besides_canned_read(make_token, widget, chat, api):
    canned = canned_services.create_canned_response(widget=widget, shortcut="hi", title="Hi", text="Hello")
    narrow = make_token(scopes=["canned:read"])
    assert "render_canned_response" not in tool_names(narrow)
    assert "list_canned_responses" in tool_names(narrow)
    refused = call_tool(narrow, "render_canned_response", {"canned_response_id": canned.pk, "chat_id": chat.pk})
    assert refused.is_error and refused.problem["code"] == "missing_scope"


def test_every_tool_says_what_it_does_and_has_schemas(make_token):
    tools = listed_tools(make_token(scopes=ALL))
    for name, tool in tools.items():
        assert len(tool.description) > 80, name
        assert tool.input_schema["type"] == "object", name
        assert "$ref" not in repr(tool.input_schema), name
        assert tool.output_schema and tool.output_schema["type"] == "object", name
    for name, tool in registry.tools().items():
        if tool.writes:  # the key is the route's own header: its length and pattern
            [header] = [p for p in schemas.operation(tool.calls[0])["parameters"] if p["in"] == "header"]
            key = tools[name].input_schema["properties"]["idempotency_key"]
            assert {k: v for k, v in key.items() if k != "description"} == header["schema"], name
    assert "idempotency_key" not in tools["suggest_reply"].input_schema["properties"]
    assert tools["get_chat"].input_schema["required"] == ["chat_id"]


# --- chats ------------------------------------------------------------------------------------------------


def test_list_chats_answers_the_rest_list_with_the_same_filters(make_token, api, widget, chat, agent):
    ChatFactory(contact=ContactFactory(widget=widget), agent=agent, status="expired")
    credential = make_token(scopes=["chats:read"])
    got = call_tool(credential, "list_chats", {"status": "active", "limit": 5})
    rest = api(scopes=["chats:read"]).get("/api/v1/chats", {"status": "active", "limit": 5}).json()
    assert not got.is_error
    assert got.data == rest
    assert [row["id"] for row in got.data["data"]] == [chat.pk]


def test_list_chats_with_labels_filters_as_rest_does(make_token, api, widget, chat, agent):
    chat_services.create_label(widget=widget, name="VIP")
    chat_services.set_chat_labels(widget=widget, chat=chat, names=["vip"], by="api")
    ChatFactory(contact=ContactFactory(widget=widget), agent=agent)
    got = call_tool(make_token(scopes=["chats:read"]), "list_chats", {"label": ["VIP"]})
    rest = api(scopes=["chats:read"]).get("/api/v1/chats?label=VIP").json()
    assert got.data == rest and [row["id"] for row in got.data["data"]] == [chat.pk]


@pytest.mark.parametrize(
    "arguments",
    [{"q": "x"}, {"label": ["no such label"]}, {"from": "2026-05-02", "to": "2026-05-01"}, {"limit": 0}],
)
def test_a_bad_list_filter_is_the_routes_422_with_its_errors(make_token, api, chat, arguments):
    got = call_tool(make_token(scopes=["chats:read"]), "list_chats", arguments)
    query = "&".join(f"{k}={item}" for k, v in arguments.items() for item in (v if isinstance(v, list) else [v]))
    rest = api(scopes=["chats:read"]).get(f"/api/v1/chats?{query}")
    assert rest.status_code == 422
    assert got.is_error
    assert got.problem == rest_problem(rest)
    assert got.problem["errors"]


def test_get_chat_is_the_chat_and_its_transcript(make_token, api, chat):
    got = call_tool(make_token(scopes=["chats:read", "transcripts:read"]), "get_chat", {"chat_id": chat.pk})
    client = api(scopes=["chats:read", "transcripts:read"])
    assert got.data["chat"] == client.get(f"/api/v1/chats/{chat.pk}").json()
    transcript = b"".join(client.get(f"/api/v1/chats/{chat.pk}/transcript").streaming_content).decode()
    assert got.data["transcript"] == transcript
    assert "Where is my order 42?" in got.data["transcript"]


def test_get_chat_of_another_widget_is_refused_as_a_missing_one(make_token, foreign_chat):
    credential = make_token(scopes=["chats:read", "transcripts:read"])
    assert_same_refusal(credential, "get_chat", {"chat_id": foreign_chat.pk}, {"chat_id": foreign_chat.pk + 999})


def test_suggest_reply_without_an_assistant_is_the_routes_409(make_token, api, chat):
    got = call_tool(make_token(scopes=["chats:write"]), "suggest_reply", {"chat_id": chat.pk})
    rest = api(scopes=["chats:write"]).post(f"/api/v1/chats/{chat.pk}/suggest-reply")
    assert rest.status_code == 409
    assert got.is_error and got.problem == rest_problem(rest)
    assert got.problem["code"] == "ai_unavailable"


def test_suggest_reply_of_another_widgets_chat_is_refused_as_a_missing_one(make_token, foreign_chat):
    credential = make_token(scopes=["chats:write"])
    assert_same_refusal(credential, "suggest_reply", {"chat_id": foreign_chat.pk}, {"chat_id": foreign_chat.pk + 9})


# --- contacts ---------------------------------------------------------------------------------------------


def test_search_contacts_answers_the_rest_search(make_token, api, widget, chat):
    ContactFactory(widget=widget, name="Grace Hopper")
    got = call_tool(make_token(scopes=["contacts:read"]), "search_contacts", {"query": "lovelace"})
    rest = api(scopes=["contacts:read"]).get("/api/v1/contacts", {"query": "lovelace"}).json()
    assert got.data == rest
    assert [row["name"] for row in got.data["data"]] == ["Ada Lovelace"]


def test_a_bad_contact_search_is_the_routes_422(make_token, api):
    got = call_tool(make_token(scopes=["contacts:read"]), "search_contacts", {"query": "x" * 101})
    rest = api(scopes=["contacts:read"]).get("/api/v1/contacts", {"query": "x" * 101})
    assert rest.status_code == 422 and got.is_error and got.problem == rest_problem(rest)


def test_get_contact_answers_the_rest_contact(make_token, api, chat):
    guid = chat.contact.guid
    got = call_tool(make_token(scopes=["contacts:read"]), "get_contact", {"contact_id": guid})
    assert got.data == api(scopes=["contacts:read"]).get(f"/api/v1/contacts/{guid}").json()


def test_get_contact_of_another_widget_is_refused_as_a_missing_one(make_token, foreign_chat):
    credential = make_token(scopes=["contacts:read"])
    assert_same_refusal(credential, "get_contact", {"contact_id": foreign_chat.contact.guid}, {"contact_id": "f" * 32})


# --- canned responses, statistics -------------------------------------------------------------------------


def test_list_and_render_canned_responses_answer_as_rest_does(make_token, api, widget, chat):
    canned = canned_services.create_canned_response(
        widget=widget, shortcut="greet", title="Greeting", text="Hello {{contact.name|there}}, {{agent.name}} here."
    )
    canned_services.create_canned_response(widget=widget, shortcut="bye", title="Bye", text="Bye!", language="en")
    scopes = ["canned:read", "chats:read", "contacts:read"]
    credential, client = make_token(scopes=scopes), api(scopes=scopes)
    listed = call_tool(credential, "list_canned_responses", {"q": "hello"})
    assert listed.data == client.get("/api/v1/canned-responses", {"q": "hello"}).json()
    assert [row["id"] for row in listed.data["data"]] == [canned.pk]
    rendered = call_tool(credential, "render_canned_response", {"canned_response_id": canned.pk, "chat_id": chat.pk})
    rest = client.get(f"/api/v1/canned-responses/{canned.pk}/render", {"chat_id": chat.pk}).json()
    assert rendered.data == rest
    assert rendered.data["text"] == f"Hello Ada Lovelace, {chat.agent.name} here."


def test_rendering_for_another_widgets_chat_is_refused_as_a_missing_one(make_token, widget, foreign_chat):
    canned = canned_services.create_canned_response(widget=widget, shortcut="hi", title="Hi", text="Hello")
    credential = make_token(scopes=["canned:read", "chats:read"])
    assert_same_refusal(
        credential,
        "render_canned_response",
        {"canned_response_id": canned.pk, "chat_id": foreign_chat.pk},
        {"canned_response_id": canned.pk, "chat_id": foreign_chat.pk + 999},
    )


def test_get_statistics_answers_the_rest_figures(make_token, api, chat):
    arguments = {"period": "month", "metric": "chats_total,messages_total"}
    got = call_tool(make_token(scopes=["stats:read"]), "get_statistics", arguments)
    rest = api(scopes=["stats:read"]).get("/api/v1/stats", arguments).json()
    assert got.data == rest
    assert set(got.data["data"]["metrics"]) == {"chats_total", "messages_total"}


def test_statistics_with_a_period_and_dates_is_the_routes_422(make_token, api):
    arguments = {"period": "week", "from": "2026-01-01"}
    got = call_tool(make_token(scopes=["stats:read"]), "get_statistics", arguments)
    rest = api(scopes=["stats:read"]).get("/api/v1/stats", arguments)
    assert rest.status_code == 422 and got.is_error and got.problem == rest_problem(rest)


# --- the transcript resource ------------------------------------------------------------------------------


def test_the_transcript_resource_is_the_routes_text(make_token, api, chat):
    credential = make_token(scopes=["transcripts:read"])
    [template] = resource_templates(credential)
    assert template.uri_template == "chat://{id}/transcript" and template.mime_type == "text/plain"
    result = read_resource(credential, f"chat://{chat.pk}/transcript")
    [content] = result.contents
    rest = api(scopes=["transcripts:read"]).get(f"/api/v1/chats/{chat.pk}/transcript")
    assert content.text == b"".join(rest.streaming_content).decode()
    assert content.mime_type == "text/plain"


def test_the_transcript_of_another_widgets_chat_is_refused_as_a_missing_one(make_token, foreign_chat):
    credential = make_token(scopes=["transcripts:read"])
    refusals = []
    for chat_id in (foreign_chat.pk, foreign_chat.pk + 999):
        try:
            read_resource(credential, f"chat://{chat_id}/transcript")
        except BaseException as raised:  # noqa: BLE001 (unwrapped from the client's task groups, then checked)
            while isinstance(raised, BaseExceptionGroup) and len(raised.exceptions) == 1:
                raised = raised.exceptions[0]
            assert isinstance(raised, MCPError), raised
            refusals.append((str(raised), raised.data))
    assert len(refusals) == 2 and refusals[0] == refusals[1]
    assert (refusals[0][1]["status"], refusals[0][1]["code"]) == (404, "not_found")
