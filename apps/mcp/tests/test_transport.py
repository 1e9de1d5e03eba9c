"""/mcp over real HTTP: the web process as `make run` starts it (uvicorn serving config.asgi with its
lifespan), the official MCP client, and raw requests for the transport's own rules (the session id,
an unknown session, resumable streams, DELETE)."""

from __future__ import annotations

import json
import uuid

import anyio
import httpx
import pytest

from apps.mcp import registry

from .conftest import BUDGET, NARROW
from .live import Live, create_widget

pytestmark = pytest.mark.embedded

ACCEPT = "application/json, text/event-stream"
HANDSHAKE_VERSION = "2025-11-25"


def listed_for(scopes) -> set[str]:
    return {tool.name for tool in registry.tools().values() if tool.allowed(frozenset(scopes))}


def problem_of(result) -> dict:
    assert result.is_error, result
    return json.loads("".join(block.text for block in result.content))


def run(coroutine_function, *args):
    return anyio.run(coroutine_function, *args)


# --- the official client ------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_the_tools_listed_are_those_the_tokens_scopes_grant(live, mode):
    async def names(token):
        async with live.client(token, mode=mode) as client:
            return {tool.name for tool in (await client.list_tools()).tools}

    narrow, full = run(names, "narrow"), run(names, "full")
    assert narrow == listed_for(NARROW) == {"list_chats"}
    assert full == set(registry.tools())
    assert narrow < full


def test_a_tool_answers_as_its_rest_twin(live):
    chat_id = live.new_chat()

    async def go():
        async with live.client("narrow") as client:
            return await client.call_tool("list_chats", {})

    result = run(go)
    assert not result.is_error, result
    rest = live.rest("GET", "/api/v1/chats", token="narrow").json()
    assert result.structured_content["data"] == rest["data"]
    assert chat_id in {chat["id"] for chat in result.structured_content["data"]}


def test_a_tool_without_its_scope_is_a_tool_error_naming_the_scope(live):
    chat_id = live.new_chat()

    async def go():
        async with live.client("narrow") as client:
            return await client.call_tool("send_message", {"chat_id": chat_id, "type": "text", "body": "hi"})

    problem = problem_of(run(go))
    assert (problem["code"], problem["status"]) == ("missing_scope", 403)
    assert problem["required_scopes"] == ["messages:write"]
    messages = live.rest("GET", f"/api/v1/chats/{chat_id}/messages").json()["data"]
    assert all(message.get("body") != "hi" for message in messages)


def test_a_foreign_id_is_the_same_tool_error_as_a_missing_one(live):
    foreign = live.new_chat(guid=create_widget(live.var_dir)["button_guid"])

    async def go():
        async with live.client("full") as client:
            return [await client.call_tool("get_chat", {"chat_id": chat_id}) for chat_id in (foreign, foreign + 10**6)]

    foreign_answer, missing_answer = run(go)
    assert problem_of(foreign_answer) == problem_of(missing_answer)
    assert problem_of(foreign_answer)["code"] == "not_found"


def test_the_tokens_rate_limit_reaches_the_tool_as_rate_limited(live):
    async def go():
        answers = []
        async with live.client("budget") as client:
            for _ in range(BUDGET + 1):
                answers.append(await client.call_tool("list_chats", {}))
        return answers

    answers = run(go)
    # the session's own requests are not API calls: the budget is the REST route's alone
    assert all(not result.is_error for result in answers[:BUDGET])
    problem = problem_of(answers[BUDGET])
    assert (problem["code"], problem["status"]) == ("rate_limited", 429)
    assert problem["retry_after"] >= 1
    # ... and it is the very budget REST spends
    assert live.rest("GET", "/api/v1/chats", token="budget").status_code == 429


def test_an_idempotent_send_repeated(live):
    chat_id = live.new_chat()
    agent_id = live.rest("GET", "/api/v1/agents").json()["data"][0]["id"]
    key = uuid.uuid4().hex
    send = {"chat_id": chat_id, "type": "text", "body": "We are here.", "agent_id": agent_id, "idempotency_key": key}

    async def go():
        async with live.client("full") as client:
            first = await client.call_tool("send_message", send)
            again = await client.call_tool("send_message", send)
            other = await client.call_tool("send_message", {**send, "body": "Something else."})
            return first, again, other

    first, again, other = run(go)
    assert not first.is_error, first
    # as REST answers a used key: 409, whatever the body, and nothing is sent again
    for repeated in (again, other):
        problem = problem_of(repeated)
        assert (problem["code"], problem["status"]) == ("idempotency_key_reused", 409)
    rest = live.rest(
        "POST",
        f"/api/v1/chats/{chat_id}/messages",
        json={"type": "text", "body": "We are here.", "agent_id": agent_id},
        headers={"X-Service-Idempotency-Key": key},
    )
    assert rest.status_code == 409 and {**rest.json(), "type": None, "title": None, "instance": None} == {
        **problem_of(again),
        "type": None,
        "title": None,
        "instance": None,
    }
    bodies = [m.get("body") for m in live.rest("GET", f"/api/v1/chats/{chat_id}/messages").json()["data"]]
    assert bodies.count("We are here.") == 1 and "Something else." not in bodies


# --- the transport ------------------------------------------------------------------------------


def _rpc(method: str, params: dict | None = None, id_: int = 1) -> dict:
    return {"jsonrpc": "2.0", "id": id_, "method": method, "params": params or {}}


INITIALIZE = _rpc(
    "initialize",
    {"protocolVersion": HANDSHAKE_VERSION, "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}},
)


def _headers(live: Live, token: str = "full", session: str | None = None, **extra) -> dict:
    headers = {"Authorization": f"Bearer {live.tokens[token]}", "Accept": ACCEPT, **extra}
    if session is not None:
        headers["Mcp-Session-Id"] = session
        headers["MCP-Protocol-Version"] = HANDSHAKE_VERSION
    return headers


def _messages(text: str) -> list[tuple[str | None, dict | None]]:
    """(event id, JSON-RPC message or None for a priming event) of an SSE body."""
    events = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        fields = {}
        for line in block.splitlines():
            name, _, value = line.partition(":")
            fields.setdefault(name, value.strip())
        if "id" in fields or "data" in fields:
            data = fields.get("data")
            events.append((fields.get("id"), json.loads(data) if data else None))
    return events


def _open_session(http: httpx.Client, live: Live, token: str = "full") -> str:
    answer = http.post(live.url, json=INITIALIZE, headers=_headers(live, token))
    assert answer.status_code == 200, answer.text
    session = answer.headers["mcp-session-id"]
    done = http.post(
        live.url,
        json={"jsonrpc": "2.0", "method": "notifications/initialized"},
        headers=_headers(live, token, session),
    )
    assert done.status_code == 202, done.text
    return session


def test_no_token_or_a_bad_one_is_401_problem_json(live):
    with httpx.Client(timeout=30) as http:
        for headers in ({}, {"Authorization": "Bearer cwt_not_a_token"}, {"Authorization": "Basic abc"}):
            answer = http.post(live.url, json=INITIALIZE, headers={"Accept": ACCEPT, **headers})
            assert answer.status_code == 401, answer.text
            assert answer.headers["content-type"].startswith("application/problem+json")
            assert answer.headers["www-authenticate"].startswith("Bearer")
            assert answer.json()["code"] in {"not_authenticated", "invalid_token"}
        in_query = http.post(
            f"{live.url}?access_token={live.tokens['full']}", json=INITIALIZE, headers={"Accept": ACCEPT}
        )
        assert (in_query.status_code, in_query.json()["code"]) == (401, "token_in_query")


def test_the_session_id_is_issued_at_initialise_and_required_after(live):
    with httpx.Client(timeout=30) as http:
        session = _open_session(http, live)
        assert len(session) >= 16
        listed = http.post(live.url, json=_rpc("tools/list", id_=2), headers=_headers(live, session=session))
        assert listed.status_code == 200
        ((_, message),) = [event for event in _messages(listed.text) if event[1] is not None]
        assert {tool["name"] for tool in message["result"]["tools"]} == set(registry.tools())
        without = http.post(live.url, json=_rpc("tools/list", id_=3), headers=_headers(live))
        assert without.status_code == 400, without.text


def test_an_unknown_session_or_another_tokens_is_404(live):
    with httpx.Client(timeout=30) as http:
        unknown = http.post(live.url, json=_rpc("tools/list"), headers=_headers(live, session=uuid.uuid4().hex))
        assert unknown.status_code == 404, unknown.text
        session = _open_session(http, live, "full")
        stolen = http.post(live.url, json=_rpc("tools/list"), headers=_headers(live, "other", session=session))
        assert stolen.status_code == 404, stolen.text


def test_delete_ends_the_session(live):
    with httpx.Client(timeout=30) as http:
        session = _open_session(http, live)
        ended = http.delete(live.url, headers=_headers(live, session=session))
        assert ended.status_code == 200, ended.text
        after = http.post(live.url, json=_rpc("tools/list"), headers=_headers(live, session=session))
        assert after.status_code == 404, after.text


PER_REQUEST_VERSION = "2026-07-28"


def _per_request_call(live, tool: str) -> tuple[dict, dict]:
    """The `_meta` and the headers of a protocol 2026-07-28 call of `tool` with the narrow token."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": PER_REQUEST_VERSION,
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    headers = {
        **_headers(live, "narrow"),
        "MCP-Protocol-Version": PER_REQUEST_VERSION,
        "Mcp-Method": "tools/call",
        "Mcp-Name": tool,
    }
    return meta, headers


def test_a_per_request_call_is_one_json_body_without_a_session(live):
    """Protocol 2026-07-28, as the official client speaks it by default: no session, and a call that
    ends within the SDK's stream window is answered as one JSON body, its twin's answer inside."""
    chat_id = live.new_chat()
    meta, headers = _per_request_call(live, "list_chats")
    call = _rpc("tools/call", {"name": "list_chats", "arguments": {}, "_meta": meta}, id_=5)
    with httpx.Client(timeout=30) as http:
        answer = http.post(live.url, json=call, headers=headers)
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("application/json")
    assert "mcp-session-id" not in answer.headers
    message = answer.json()
    assert message["id"] == 5 and not message["result"]["isError"], message
    rest = live.rest("GET", "/api/v1/chats", token="narrow").json()
    assert message["result"]["structuredContent"]["data"] == rest["data"]
    assert chat_id in {chat["id"] for chat in rest["data"]}


def test_a_per_request_call_with_arguments_is_answered_with_them(live):
    """Protocol 2026-07-28, a call with an argument: the SDK checks its headers against the tool's
    input schema (the server's `get_tool_input_schema`) and the twin gets the argument."""
    live.new_chat()
    live.new_chat()
    meta, headers = _per_request_call(live, "list_chats")
    call = _rpc("tools/call", {"name": "list_chats", "arguments": {"limit": 1}, "_meta": meta}, id_=6)
    with httpx.Client(timeout=30) as http:
        answer = http.post(live.url, json=call, headers=headers)
    assert answer.status_code == 200, answer.text
    message = answer.json()
    assert message["id"] == 6 and not message["result"]["isError"], message
    rest = live.rest("GET", "/api/v1/chats?limit=1", token="narrow").json()
    assert message["result"]["structuredContent"]["data"] == rest["data"]
    assert len(rest["data"]) == 1


def test_a_stream_resumes_from_its_last_event_id(live):
    """The SDK's resumability: each SSE event carries an id (the event store keeps them), and a GET
    with `Last-Event-ID` replays what followed on that stream: a client whose connection dropped
    after the priming event gets the answer it missed."""
    with httpx.Client(timeout=30) as http:
        session = _open_session(http, live)
        answer = http.post(live.url, json=_rpc("tools/list", id_=7), headers=_headers(live, session=session))
        events = _messages(answer.text)
        priming = [event_id for event_id, message in events if message is None]
        (result,) = [message for _, message in events if message is not None]
        assert priming and all(event_id for event_id, _ in events)
        with http.stream(
            "GET", live.url, headers=_headers(live, session=session, **{"Last-Event-ID": priming[0]})
        ) as replay:
            assert replay.status_code == 200
            text = ""
            for chunk in replay.iter_text():
                text += chunk
                if '"id":7' in text.replace(" ", "") or '"id": 7' in text:
                    break
        replayed = [message for _, message in _messages(text) if message is not None]
        assert replayed and replayed[0] == result
