"""The server's own rules (apps.mcp.server) through the official client, in-process: what is listed
for which scopes, arguments it refuses before any route, a token revoked mid-session, resources.
The tools run their REST twins in worker threads, on their own database connections: these tests
commit (transactional_db)."""

from __future__ import annotations

import json

import anyio
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from apps.chats.tests.factories import ChatFactory
from apps.core.models import ApiToken
from apps.mcp import registry, server

pytestmark = pytest.mark.django_db(transaction=True)


def _run(credential: str, work):
    async def go():
        async with Client(server.build(credential)) as client:
            return await work(client)

    return anyio.run(go)


def _raised(credential: str, work) -> BaseException:
    """What running `work` raised, out of the client's task groups."""
    try:
        _run(credential, work)
    except BaseException as raised:  # noqa: BLE001 (unwrapped and returned to be checked)
        while isinstance(raised, BaseExceptionGroup) and len(raised.exceptions) == 1:
            raised = raised.exceptions[0]
        return raised
    raise AssertionError("nothing was raised")


def _problem(result) -> dict:
    assert result.is_error, result
    return json.loads(result.content[0].text)


def test_each_tool_is_listed_exactly_when_the_token_holds_a_scope_of_each_of_its_routes(make_token):
    every_route_scope = sorted(
        {scope for tool in registry.tools().values() for c in tool.calls for scope in c.scopes()}
    )
    for scope in every_route_scope:
        listed = _run(make_token(scopes=[scope]), lambda client: client.list_tools())
        names = {tool.name for tool in listed.tools}
        expected = {t.name for t in registry.tools().values() if all(scope in c.scopes() for c in t.calls)}
        assert names == expected, scope
    described = {tool.name: tool for tool in _run(make_token(), lambda client: client.list_tools()).tools}
    for name, tool in registry.tools().items():
        assert described[name].input_schema == tool.input_schema
        assert described[name].annotations.read_only_hint is not tool.writes
        assert ("idempotency_key" in tool.input_schema["properties"]) is tool.writes


def test_an_unknown_argument_or_a_missing_required_one_is_refused_with_the_apis_words(make_token, widget):
    chat = ChatFactory(widget=widget)
    credential = make_token(scopes=["chats:read", "transcripts:read"])

    async def work(client):
        return (
            await client.call_tool("get_chat", {"chat_id": chat.pk, "chatid": 1}),
            await client.call_tool("get_chat", {}),
        )

    unknown, missing = _run(credential, work)
    assert _problem(unknown)["code"] == "validation_failed" and list(_problem(unknown)["errors"]) == ["chatid"]
    assert _problem(missing) == {
        "code": "validation_failed",
        "detail": "Validation failed",
        "status": 422,
        "errors": {"chat_id": ["This field is required."]},
    }


def test_an_unknown_tool_is_a_protocol_error(make_token):
    async def work(client):
        return await client.call_tool("drop_database", {})

    raised = _raised(make_token(), work)
    assert isinstance(raised, MCPError) and "Unknown tool: drop_database" in raised.message


def test_a_token_revoked_mid_session_is_refused_at_its_next_call(make_token, widget):
    from django.utils import timezone

    credential = make_token(scopes=["chats:read"])

    async def work(client):
        first = await client.call_tool("list_chats", {})
        await anyio.to_thread.run_sync(lambda: ApiToken.objects.filter(widget=widget).update(revoked_at=timezone.now()))
        return first, await client.call_tool("list_chats", {})

    first, after = _run(credential, work)
    assert not first.is_error
    assert (_problem(after)["status"], _problem(after)["code"]) == (401, "invalid_token")


def test_the_transcript_resource_is_listed_and_read_by_its_scope(make_token, widget):
    chat = ChatFactory(widget=widget)
    uri = f"chat://{chat.pk}/transcript"

    async def work(client):
        templates = await client.list_resource_templates()
        return [t.uri_template for t in templates.resource_templates], await client.read_resource(uri)

    listed, read = _run(make_token(scopes=["transcripts:read"]), work)
    assert listed == list(registry.resources())
    assert read.contents[0].uri == uri and read.contents[0].mime_type == "text/plain"

    async def refused(client):
        templates = await client.list_resource_templates()
        assert templates.resource_templates == []
        return await client.read_resource(uri)

    raised = _raised(make_token(scopes=["chats:read"]), refused)
    assert isinstance(raised, MCPError)
    assert raised.data["code"] == "missing_scope" and raised.data["required_scopes"] == ["transcripts:read"]


def test_the_sdk_reads_a_tools_input_schema_without_listing_the_tools():
    """A per-request call with arguments has its `Mcp-Param-*` headers checked against the tool's
    input schema; the server hands the SDK each schema by name, so the check does not run the
    `tools/list` handler (a worker thread and the token resolved again) for every call."""
    built = server.build("unused")
    assert built.get_tool_input_schema is not None
    for name, tool in registry.tools().items():
        assert built.get_tool_input_schema(name) == tool.input_schema
    assert built.get_tool_input_schema("no_such_tool") is None
