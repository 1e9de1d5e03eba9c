"""An HTTP request's synchronous work runs on one thread (apps.mcp.server.RequestThread): the token
is checked and the tool runs on one database connection, which goes back when the request ends."""

from __future__ import annotations

import json
import threading
import time

import anyio
import pytest
from django.db.backends.signals import connection_created
from django.utils import timezone

from apps.chats.tests.factories import ChatFactory
from apps.core.models import ApiToken
from apps.mcp import server
from apps.mcp.asgi import McpApp
from apps.mcp.server import RequestThread
from apps.mcp.sessions import Registry

from .test_shared_sessions import request, rpc

pytestmark = pytest.mark.django_db(transaction=True)

VERSION = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": VERSION,
    "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


def _call(token: str):
    async def go():
        app = McpApp(Registry())
        async with app.run():
            return await request(
                app,
                "POST",
                token,
                body=rpc("tools/call", {"name": "list_chats", "arguments": {}, "_meta": META}),
                mcp_protocol_version=VERSION,
                mcp_method="tools/call",
                mcp_name="list_chats",
            )

    return anyio.run(go)


@pytest.fixture
def closes(monkeypatch) -> list[str]:
    """The threads on which the request thread's connections were closed (returned to the pool)."""
    seen: list[str] = []
    real = server.close_old_connections

    def closing():
        seen.append(threading.current_thread().name)
        real()

    monkeypatch.setattr(server, "close_old_connections", closing)
    RequestThread._idle.clear()
    return seen


def _wait_idle() -> None:
    deadline = time.monotonic() + 5
    while not RequestThread._idle:
        assert time.monotonic() < deadline, "the request's thread never became idle"
        time.sleep(0.01)


def test_a_tool_call_checks_its_token_and_runs_on_one_connection_it_gives_back(make_token, widget, closes):
    chat = ChatFactory(contact__widget=widget)
    token = make_token(widget, ["chats:read"])
    opened: list[str] = []

    def on_open(sender, connection, **kwargs):
        opened.append(threading.current_thread().name)

    connection_created.connect(on_open)
    try:
        answer = _call(token)
    finally:
        connection_created.disconnect(on_open)

    assert answer.status == 200, answer.text
    result = json.loads(answer.text)["result"]  # one JSON body, as the protocol answers a call
    assert not result["isError"], result
    assert [row["id"] for row in result["structuredContent"]["data"]] == [chat.pk]
    assert len(opened) == 1, opened
    assert opened[0].startswith("mcp-request")
    _wait_idle()  # and waits for the next request once its connection went back
    assert closes == opened


def test_a_refused_token_gives_its_connection_back_too(make_token, widget, closes):
    token = make_token(widget, ["chats:read"])
    ApiToken.objects.filter(widget=widget).update(revoked_at=timezone.now())
    answer = _call(token)
    assert answer.status == 401, answer.text
    _wait_idle()
    assert len(closes) == 1 and closes[0].startswith("mcp-request")
