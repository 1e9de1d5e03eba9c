"""`manage.py mcp --token-env NAME` as a desktop assistant starts it: a subprocess on the live
embedded default (the web process of the `live` fixture shares it), spoken to with the official
client over its stdin and stdout."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from contextlib import asynccontextmanager

import anyio
import pytest
from mcp import Client, StdioServerParameters

from apps.mcp import registry
from tests.live import ROOT, environment

from .conftest import BUDGET, NARROW
from .live import create_widget

pytestmark = pytest.mark.embedded

TOKEN_ENV = "CHATWIDGET_TOKEN"


def _parameters(live, credential: str) -> StdioServerParameters:
    env = environment(live.var_dir, API_RATE_LIMIT_PER_MINUTE=str(BUDGET), **{TOKEN_ENV: credential})
    return StdioServerParameters(
        command=sys.executable, args=["manage.py", "mcp", "--token-env", TOKEN_ENV], env=env, cwd=ROOT
    )


@asynccontextmanager
async def stdio_client(live, token: str):
    async with Client(_parameters(live, live.tokens[token]), mode="legacy", read_timeout_seconds=120) as client:
        yield client


def problem_of(result) -> dict:
    assert result.is_error, result
    return json.loads("".join(block.text for block in result.content))


def test_over_stdio_the_tools_listed_follow_the_scopes_and_a_call_answers_as_rest(live):
    chat_id = live.new_chat("Over stdio?")

    async def go(token):
        async with stdio_client(live, token) as client:
            assert client.server_info.name == "chat-widget"
            names = {tool.name for tool in (await client.list_tools()).tools}
            listed = await client.call_tool("list_chats", {})
            refused = await client.call_tool("close_chat", {"chat_id": chat_id})
            return names, listed, refused

    narrow, listed, refused = anyio.run(go, "narrow")
    assert narrow == {t.name for t in registry.tools().values() if t.allowed(frozenset(NARROW))}
    assert not listed.is_error
    assert listed.structured_content["data"] == live.rest("GET", "/api/v1/chats", token="narrow").json()["data"]
    problem = problem_of(refused)
    assert (problem["code"], problem["status"]) == ("missing_scope", 403)
    assert problem["required_scopes"] == ["chats:write"]
    assert live.rest("GET", f"/api/v1/chats/{chat_id}").json()["status"] != "expired"

    full, _, closed = anyio.run(go, "full")
    assert full == set(registry.tools()) and narrow < full
    assert not closed.is_error, closed


def test_over_stdio_a_foreign_id_a_rate_limit_and_a_repeated_send(live):
    foreign = live.new_chat(guid=create_widget(live.var_dir)["button_guid"])
    chat_id = live.new_chat("Will you answer twice?")
    agent_id = live.rest("GET", "/api/v1/agents").json()["data"][0]["id"]
    send = {
        "chat_id": chat_id,
        "type": "text",
        "body": "Once only.",
        "agent_id": agent_id,
        "idempotency_key": uuid.uuid4().hex,
    }

    async def go():
        async with stdio_client(live, "stdio_budget") as client:
            answers = {
                "foreign": await client.call_tool("get_chat", {"chat_id": foreign}),
                "missing": await client.call_tool("get_chat", {"chat_id": foreign + 10**6}),
                "sent": await client.call_tool("send_message", send),
                "repeated": await client.call_tool("send_message", send),
            }
            spent = [await client.call_tool("list_chats", {}) for _ in range(BUDGET)]
            return answers, spent

    answers, spent = anyio.run(go)
    assert problem_of(answers["foreign"]) == problem_of(answers["missing"])
    assert problem_of(answers["foreign"])["code"] == "not_found"
    assert not answers["sent"].is_error, answers["sent"]
    assert problem_of(answers["repeated"])["code"] == "idempotency_key_reused"
    bodies = [m.get("body") for m in live.rest("GET", f"/api/v1/chats/{chat_id}/messages").json()["data"]]
    assert bodies.count("Once only.") == 1
    # BUDGET calls a minute in all: the four above and the first BUDGET - 4 lists pass, the rest are refused
    assert not any(result.is_error for result in spent[: BUDGET - 4])
    problem = problem_of(spent[-1])
    assert (problem["code"], problem["status"]) == ("rate_limited", 429)


@pytest.mark.parametrize("credential", ["", "cwt_not_a_real_token"])
def test_without_a_token_that_authenticates_the_command_refuses_to_start(live, credential):
    done = subprocess.run(
        [sys.executable, "manage.py", "mcp", "--token-env", TOKEN_ENV],
        cwd=ROOT,
        env=environment(live.var_dir, **{TOKEN_ENV: credential}),
        input="",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert TOKEN_ENV in done.stderr and done.stdout == ""
