"""Sessions across the web server's processes: two McpApp instances, each with its own SDK session
manager (as two processes, or two replicas, have), sharing only the store every process shares
(Django's cache: Redis on PostgreSQL + Redis, the file cache on the embedded default)."""

from __future__ import annotations

import contextlib
import json
import threading
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

import anyio
import mcp_types as types
import pytest
from mcp.server.streamable_http import EventMessage

from apps.mcp import asgi, registry
from apps.mcp.asgi import McpApp
from apps.mcp.sessions import Registry, SessionEvents

pytestmark = pytest.mark.django_db(transaction=True)

ACCEPT = "application/json, text/event-stream"
VERSION = "2025-11-25"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}},
}


def rpc(method: str, params: dict | None = None, id_: int = 2) -> dict:
    return {"jsonrpc": "2.0", "id": id_, "method": method, "params": params or {}}


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    text: str

    def events(self) -> list[tuple[str | None, dict | None]]:
        """(event id, JSON-RPC message, None for a priming event) of the SSE body."""
        found = []
        for block in self.text.replace("\r\n", "\n").split("\n\n"):
            fields: dict[str, str] = {}
            for line in block.splitlines():
                name, _, value = line.partition(":")
                fields.setdefault(name, value.strip())
            if "id" in fields or "data" in fields:
                found.append((fields.get("id"), json.loads(fields["data"]) if fields.get("data") else None))
        return found

    def messages(self) -> list[dict]:
        return [message for _, message in self.events() if message is not None]


async def request(
    app: McpApp,
    method: str,
    token: str,
    *,
    session: str | None = None,
    body: dict | None = None,
    until: Callable[[str], bool] | None = None,
    **headers: str,
) -> Answer:
    """One HTTP request to `app` (ASGI). The client hangs up once the body is complete, or once
    `until(the body so far)` holds (a resumed stream stays open)."""
    sent = {"authorization": f"Bearer {token}", "accept": ACCEPT, "content-type": "application/json"}
    if session is not None:
        sent.update({"mcp-session-id": session, "mcp-protocol-version": VERSION})
    sent.update({name.replace("_", "-").lower(): value for name, value in headers.items()})
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": "/mcp",
        "raw_path": b"/mcp",
        "root_path": "",
        "query_string": b"",
        "headers": [(name.encode(), value.encode()) for name, value in sent.items()],
        "client": ("127.0.0.1", 40000),
        "server": ("testserver", 80),
    }
    payload = json.dumps(body).encode() if body is not None else b""
    hung_up = anyio.Event()
    read = False
    status, answer_headers, chunks = 0, {}, []

    async def receive():
        nonlocal read
        if not read:
            read = True
            return {"type": "http.request", "body": payload, "more_body": False}
        await hung_up.wait()
        return {"type": "http.disconnect"}

    async def send(message):
        nonlocal status, answer_headers
        if message["type"] == "http.response.start":
            status = message["status"]
            answer_headers = {name.decode(): value.decode() for name, value in message.get("headers", [])}
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))
            text = b"".join(chunks).decode()
            if not message.get("more_body", False) or (until is not None and until(text)):
                hung_up.set()

    with anyio.fail_after(30):
        await app(scope, receive, send)
    return Answer(status, answer_headers, b"".join(chunks).decode())


async def initialize(app: McpApp, token: str) -> Answer:
    answer = await request(app, "POST", token, body=INITIALIZE)
    assert answer.status == 200, answer.text
    assert answer.messages()[0]["result"]["protocolVersion"] == VERSION
    return answer


async def open_session(app: McpApp, token: str) -> str:
    return (await initialize(app, token)).headers["mcp-session-id"]


@contextlib.asynccontextmanager
async def processes(idle: int = 30 * 60) -> AsyncIterator[tuple[McpApp, McpApp]]:
    """Two web processes' MCP servers, running."""
    first, second = McpApp(Registry(idle=idle)), McpApp(Registry(idle=idle))
    async with first.run(), second.run():
        yield first, second


def run(test: Callable[[], object]) -> None:
    anyio.run(test)


def test_a_session_opened_on_one_process_is_served_by_another(make_token):
    token = make_token()

    async def go():
        async with processes() as (a, b):
            session = await open_session(a, token)
            done = await request(
                b, "POST", token, session=session, body={"jsonrpc": "2.0", "method": "notifications/initialized"}
            )
            assert done.status == 202, done.text
            listed = await request(b, "POST", token, session=session, body=rpc("tools/list"))
            assert listed.status == 200, listed.text
            assert listed.headers["mcp-session-id"] == session
            assert {tool["name"] for tool in listed.messages()[0]["result"]["tools"]} == set(registry.tools())
            called = await request(
                b, "POST", token, session=session, body=rpc("tools/call", {"name": "list_chats", "arguments": {}}, 3)
            )
            result = called.messages()[0]["result"]
            assert not result.get("isError"), result
            assert result["structuredContent"]["data"] == []
            again = await request(a, "POST", token, session=session, body=rpc("tools/list", id_=4))
            assert again.status == 200 and again.messages()[0]["id"] == 4

    run(go)


def test_a_request_without_a_session_or_with_an_unknown_one_is_refused_on_any_process(make_token):
    token = make_token()

    async def go():
        async with processes() as (a, b):
            await open_session(a, token)
            for app in (a, b):
                without = await request(app, "POST", token, body=rpc("tools/list"))
                assert without.status == 400, without.text
                unknown = await request(app, "POST", token, session=uuid.uuid4().hex, body=rpc("tools/list"))
                assert unknown.status == 404, unknown.text

    run(go)


def test_delete_on_one_process_ends_the_session_on_every_process(make_token):
    token = make_token()

    async def go():
        async with processes() as (a, b):
            session = await open_session(a, token)
            assert (await request(b, "POST", token, session=session, body=rpc("tools/list"))).status == 200
            ended = await request(b, "DELETE", token, session=session)
            assert ended.status == 200, ended.text
            for app in (a, b):
                after = await request(app, "POST", token, session=session, body=rpc("tools/list", id_=5))
                assert after.status == 404, after.text
            assert session not in a.manager._server_instances  # the opening process let it go too

    run(go)


class WatchedRegistry(Registry):
    """The registry, noting each read of a session."""

    def __init__(self):
        super().__init__()
        self.reads = 0
        self.reading = threading.Event()

    async def get(self, session_id):
        self.reads += 1
        self.reading.set()
        return await super().get(session_id)


def test_a_requests_session_is_read_once_while_its_token_is_checked(make_token, monkeypatch):
    token = make_token()
    sessions = WatchedRegistry()
    app = McpApp(sessions)
    check = asgi._authenticate
    overlapped = []

    def authenticate(meta):
        # The token's check waits (in its worker thread) for the session's read to start.
        overlapped.append(sessions.reading.wait(5))
        return check(meta)

    async def go():
        async with app.run():
            session = await open_session(app, token)
            monkeypatch.setattr(asgi, "_authenticate", authenticate)
            sessions.reads = 0
            sessions.reading.clear()
            listed = await request(app, "POST", token, session=session, body=rpc("tools/list"))
            assert listed.status == 200, listed.text
            assert (overlapped, sessions.reads) == ([True], 1)
            refused = await request(app, "POST", "not-a-token", session=session, body=rpc("tools/list", id_=3))
            assert refused.status == 401, refused.text

    run(go)


def test_another_tokens_request_is_404_on_every_process(make_token):
    owner, other = make_token(), make_token()

    async def go():
        async with processes() as (a, b):
            session = await open_session(a, owner)
            for app in (a, b):
                stolen = await request(app, "POST", other, session=session, body=rpc("tools/list"))
                assert stolen.status == 404, stolen.text
                assert (await request(app, "DELETE", other, session=session)).status == 404
            # ... and the session is still its owner's, on both
            for app in (b, a):
                assert (await request(app, "POST", owner, session=session, body=rpc("tools/list"))).status == 200

    run(go)


def test_a_stream_resumes_on_another_process_from_its_last_event_id(make_token):
    token = make_token()

    async def go():
        async with processes() as (a, b):
            opened = await initialize(a, token)
            session = opened.headers["mcp-session-id"]
            answer = await request(a, "POST", token, session=session, body=rpc("tools/list", id_=7))
            events = opened.events() + answer.events()
            priming = [event_id for event_id, message in events if message is None]
            assert len(priming) == 2 and all(event_id for event_id, _ in events)
            assert len({event_id for event_id, _ in events}) == len(events)

            def answered(id_: int) -> Callable[[str], bool]:
                return lambda text: f'"id":{id_}' in text.replace(" ", "")

            for first, reply in zip(priming, (opened.messages()[0], answer.messages()[0]), strict=True):
                replay = await request(
                    b, "GET", token, session=session, until=answered(reply["id"]), last_event_id=first
                )
                assert replay.status == 200, replay.text
                assert replay.messages()[0] == reply
            # an event id is its session's own: another session of the same token resumes nothing
            other = await open_session(b, token)
            foreign = await request(a, "GET", token, session=other, last_event_id=priming[0])
            assert foreign.status == 200 and foreign.messages() == []

    run(go)


def test_a_resumed_stream_follows_a_request_still_answered_by_another_process(make_token):
    """The events of a request running on process A reach a client that resumed its stream on B."""
    session = uuid.uuid4().hex

    async def go():
        on_a, on_b = SessionEvents(session), SessionEvents(session)
        priming = await on_a.store_event("9", None)
        await on_a.store_event("8", types.JSONRPCResponse(jsonrpc="2.0", id=8, result={}))
        got: list[EventMessage] = []

        async def collect(event: EventMessage) -> None:
            got.append(event)

        async with anyio.create_task_group() as running:
            replayed = []
            running.start_soon(lambda: _into(replayed, on_b.replay_events_after(priming, collect)))
            await anyio.sleep(0.5)
            assert got == [] and replayed == []  # waiting for the answer
            progress = types.JSONRPCNotification(jsonrpc="2.0", method="notifications/progress", params={"progress": 1})
            await on_a.store_event("9", progress)
            await on_a.store_event("9", types.JSONRPCResponse(jsonrpc="2.0", id=9, result={"ok": True}))
        assert replayed == ["9"]
        assert [event.message for event in got] == [
            progress,
            types.JSONRPCResponse(jsonrpc="2.0", id=9, result={"ok": True}),
        ]
        tag, _, first = priming.rpartition("-")
        assert [event.event_id for event in got] == [f"{tag}-{int(first) + 2}", f"{tag}-{int(first) + 3}"]
        # resumed after its answer, a stream has nothing more to wait for
        with anyio.fail_after(5):
            assert await on_b.replay_events_after(got[-1].event_id, collect) == "9"
        assert len(got) == 2

    run(go)


async def _into(found: list, coroutine) -> None:
    found.append(await coroutine)


def test_a_session_idle_for_its_idle_time_ends_on_every_process(make_token):
    token = make_token()

    async def go():
        async with processes(idle=2) as (a, b):
            session = await open_session(a, token)
            for app in (b, a, b):  # each use moves the expiry on
                await anyio.sleep(1.2)
                assert (await request(app, "POST", token, session=session, body=rpc("ping"))).status == 200
            await anyio.sleep(3)
            for app in (a, b):
                assert (await request(app, "POST", token, session=session, body=rpc("ping"))).status == 404

    run(go)


def test_a_busy_session_moves_its_expiry_on_once_per_thirtieth_of_its_idle_time(monkeypatch):
    from apps.mcp import sessions

    writes = []
    monkeypatch.setattr(sessions.time, "monotonic", lambda: clock[0])
    clock = [1000.0]
    registry_ = Registry(idle=30 * 60)

    async def go():
        await registry_.open("s1", "token-1", None)
        kind = type(sessions.store())  # counted at the cache's class, whichever object serves
        real = kind.touch
        monkeypatch.setattr(kind, "touch", lambda self, key, *a, **kw: writes.append(key) or real(self, key, *a, **kw))
        assert await registry_.touch("s1")  # the first use of this process: written
        clock[0] += 59
        assert await registry_.touch("s1")  # within a minute: left as it is
        clock[0] += 2
        assert await registry_.touch("s1")  # a minute on: written again
        assert await registry_.touch("s1", force=True)
        await registry_.end("s1")
        clock[0] += 61
        assert not await registry_.touch("s1")  # ended: the store says so

    run(go)
    assert len(writes) == 2 * 4  # the session's entry and its event counter, each time


def test_a_session_keeps_its_newest_events_and_ending_it_drops_them(make_token, monkeypatch):
    from apps.mcp import sessions

    monkeypatch.setattr(sessions, "MAX_EVENTS", 3)
    session = uuid.uuid4().hex
    registry_ = Registry()

    async def go():
        await registry_.open(session, "token-1", None)
        events = SessionEvents(session)
        ids = [await events.store_event("5", None)]
        for n in range(4):
            note = types.JSONRPCNotification(jsonrpc="2.0", method="notifications/progress", params={"progress": n})
            ids.append(await events.store_event("5", note))
        got: list[EventMessage] = []

        async def collect(event: EventMessage) -> None:
            got.append(event)

        # the first two are dropped: resuming from the first is resuming from nothing
        assert await events.replay_events_after(ids[0], collect) is None
        assert await events.replay_events_after(ids[1], collect) is None
        # from the third, the two after it, as they were sent
        events.follow_for = 0
        assert await events.replay_events_after(ids[2], collect) == "5"
        assert [event.event_id for event in got] == ids[3:]
        assert [event.message.params["progress"] for event in got] == [2, 3]
        await registry_.end(session)
        assert await events.replay_events_after(ids[3], collect) is None

    run(go)
