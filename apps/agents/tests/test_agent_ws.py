"""The operator websocket /ws/agent/, end to end through config.asgi.application: Django session login,
origin check, presence events, and the widget's console frames. Transactions really commit here, so
the pushes that apps.chats.realtime sends after commit really go out."""

import asyncio
import json
import time
from unittest import mock

import pytest
from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async
from channels.layers import InMemoryChannelLayer
from django.conf import settings
from django.contrib.sessions.models import Session
from django.test import Client

from apps.agents import presence
from apps.agents import services as agent_services
from apps.agents.consumers import AgentConsumer
from apps.agents.models import Agent, AgentEvent
from apps.agents.presence import SOCKET_TTL_SECONDS
from apps.agents.tasks_presence import reap_presence
from apps.agents.tests.factories import HumanAgentFactory
from apps.chats import services as chat_services
from apps.chats.visitor import services as visitor_services
from config.asgi import application
from tests.support.factories import UserFactory
from tests.support.metrics import sample
from tests.support.websocket import WebsocketCommunicator

pytestmark = pytest.mark.django_db(transaction=True)

ORIGIN = (b"origin", b"http://testserver")
TIMEOUT = 3


class Clock:
    def __init__(self):
        self.now = time.time()

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture(autouse=True)
def memory_layer(settings):
    """A fresh in-memory layer per test (the setting change drops the cached one)."""
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}


@pytest.fixture(autouse=True)
def fresh_presence(monkeypatch):
    """Presence of this test only: a new in-process store, or Redis without presence keys."""
    monkeypatch.setattr(presence, "_memory", presence.MemoryStore())
    monkeypatch.setattr(presence, "_last_in_process_reap", 0.0)
    if settings.REDIS_URL:
        client = presence.store().client
        keys = list(client.scan_iter("presence:*", count=1000))
        if keys:
            client.delete(*keys)


@pytest.fixture
def clock(monkeypatch):
    fake = Clock()
    monkeypatch.setattr(presence, "clock", fake)
    return fake


@pytest.fixture
def operator(widget):
    return HumanAgentFactory(widget=widget, name="Olga")


def run(scenario):
    async_to_sync(scenario)()


def session_cookie(user) -> tuple[bytes, bytes]:
    client = Client()
    client.force_login(user)
    return b"cookie", f"{settings.SESSION_COOKIE_NAME}={client.cookies[settings.SESSION_COOKIE_NAME].value}".encode()


def communicator(user=None, query: str = "", origin=ORIGIN) -> WebsocketCommunicator:
    headers = [origin] if origin else []
    if user is not None:
        headers.append(session_cookie(user))
    return WebsocketCommunicator(application, f"/ws/agent/{'?' + query if query else ''}", headers=headers)


async def open_socket(user, query: str = "") -> WebsocketCommunicator:
    socket = await database_sync_to_async(communicator)(user, query)
    connected, _ = await socket.connect(timeout=TIMEOUT)
    assert connected
    ready = await socket.receive_json_from(timeout=TIMEOUT)
    assert ready["event"] == "ready", ready
    return socket


async def open_socket_frame(user, query: str = ""):
    """(the socket, its ready frame)."""
    socket = await database_sync_to_async(communicator)(user, query)
    connected, _ = await socket.connect(timeout=TIMEOUT)
    assert connected
    return socket, await socket.receive_json_from(timeout=TIMEOUT)


async def close_code(user=None, query: str = "") -> int:
    socket = await database_sync_to_async(communicator)(user, query)
    connected, _ = await socket.connect(timeout=TIMEOUT)
    assert connected  # accepted, then closed with a code the console can read
    output = await socket.receive_output(timeout=TIMEOUT)
    assert output["type"] == "websocket.close", output
    return output["code"]


def presence_events(captured_events) -> list:
    return [(t, d["operator_id"]) for t, d in captured_events() if t.startswith("agent.")]


def visitor_says(widget, body="Hello"):
    session, _ = visitor_services.start_session(widget=widget, name="Anna")
    return chat_services.post_client_message(
        widget=widget, contact=session.contact, data=chat_services.MessageInput(body=body)
    )


def agent_says(widget, chat, agent, body="Hi", visibility="public"):
    return chat_services.post_agent_message(
        widget=widget, chat=chat, agent=agent, data=chat_services.MessageInput(body=body, visibility=visibility)
    )


# --- presence -----------------------------------------------------------------------------------------


def test_presence_across_two_sockets_and_a_killed_process(widget, operator, clock, captured_events):
    """Two sockets here and one of a process that dies: agent.online once, and agent.offline once,
    from the reaper, after the dead socket expires."""
    killed = {"agent_id": operator.pk, "widget_id": widget.pk, "socket_id": "killed-process"}

    async def scenario():
        first = await open_socket(operator.user)
        second = await open_socket(operator.user)
        await database_sync_to_async(presence.open_socket)(**killed)  # the other process never closes it
        assert presence.online_agent_ids(widget.pk) == {operator.pk}

        await first.disconnect()
        assert await database_sync_to_async(presence_events)(captured_events) == [("agent.online", operator.pk)]
        await second.disconnect()
        assert presence.online_agent_ids(widget.pk) == {operator.pk}  # the killed socket has not expired
        assert await database_sync_to_async(presence_events)(captured_events) == [("agent.online", operator.pk)]

        clock.advance(SOCKET_TTL_SECONDS + 1)
        assert presence.online_agent_ids(widget.pk) == set()
        assert await database_sync_to_async(reap_presence)() == 1
        assert await database_sync_to_async(reap_presence)() == 0

    run(scenario)
    assert presence_events(captured_events) == [("agent.online", operator.pk), ("agent.offline", operator.pk)]


def test_closing_the_last_of_two_sockets_announces_offline_once(widget, operator, captured_events):
    async def scenario():
        first = await open_socket(operator.user)
        second = await open_socket(operator.user)
        await first.disconnect()
        assert presence.online_agent_ids(widget.pk) == {operator.pk}
        assert await database_sync_to_async(presence_events)(captured_events) == [("agent.online", operator.pk)]
        await second.disconnect()

    run(scenario)
    assert presence_events(captured_events) == [("agent.online", operator.pk), ("agent.offline", operator.pk)]
    assert presence.online_agent_ids(widget.pk) == set()


def test_a_frame_pushed_as_the_client_leaves_does_not_keep_the_agent_online(widget, operator, captured_events):
    """The server raises on a send once the client is gone, while the socket's disconnect still waits
    in the queue: the frame is dropped and the disconnect still takes the agent offline at once."""

    async def scenario():
        socket = await open_socket(operator.user)
        socket.gone = True
        await database_sync_to_async(visitor_says)(widget)  # pushed to the console group: the send raises
        await socket.refused_a_send(TIMEOUT)
        await socket.disconnect(code=1005)
        assert presence.online_agent_ids(widget.pk) == set()

    run(scenario)
    assert presence_events(captured_events) == [("agent.online", operator.pk), ("agent.offline", operator.pk)]


def test_a_socket_whose_consumer_fails_still_takes_the_agent_offline(widget, operator, monkeypatch, captured_events):
    """A consumer ended by an error still runs its disconnect once, and the error is not hidden."""

    async def broken_push(self, event):
        raise RuntimeError("a bug in a handler")

    monkeypatch.setattr(AgentConsumer, "push", broken_push)

    async def scenario():
        socket = await open_socket(operator.user)
        await database_sync_to_async(visitor_says)(widget)
        with pytest.raises(RuntimeError, match="a bug in a handler"):
            await socket.wait(TIMEOUT)
        assert presence.online_agent_ids(widget.pk) == set()

    run(scenario)
    assert presence_events(captured_events) == [("agent.online", operator.pk), ("agent.offline", operator.pk)]


def test_a_layer_failing_on_the_way_out_still_takes_the_agent_offline(widget, operator, monkeypatch, captured_events):
    """Leaving the console group fails (the layer's Redis timing out): presence is withdrawn anyway."""

    async def failing_discard(self, group, channel):
        raise ConnectionError("layer down")

    monkeypatch.setattr(InMemoryChannelLayer, "group_discard", failing_discard)

    async def scenario():
        socket = await open_socket(operator.user)
        await socket.disconnect()
        assert presence.online_agent_ids(widget.pk) == set()

    run(scenario)
    assert presence_events(captured_events) == [("agent.online", operator.pk), ("agent.offline", operator.pk)]


def test_heartbeats_keep_a_live_socket_online_past_the_expiry(widget, operator, clock, monkeypatch, captured_events):
    monkeypatch.setattr(AgentConsumer, "heartbeat_seconds", 0.05)

    async def scenario():
        socket = await open_socket(operator.user)
        for _ in range(3):
            clock.advance(SOCKET_TTL_SECONDS - 5)
            await asyncio.sleep(0.3)  # a few heartbeats at the new time
            assert await database_sync_to_async(reap_presence)() == 0
            assert presence.online_agent_ids(widget.pk) == {operator.pk}
        await socket.disconnect()

    run(scenario)
    assert presence_events(captured_events) == [("agent.online", operator.pk), ("agent.offline", operator.pk)]


def test_a_ping_is_a_heartbeat(widget, operator, clock):
    async def scenario():
        socket = await open_socket(operator.user)
        clock.advance(SOCKET_TTL_SECONDS - 5)
        await socket.send_json_to({"type": "ping"})
        assert await socket.receive_json_from(timeout=TIMEOUT) == {"event": "pong"}
        clock.advance(SOCKET_TTL_SECONDS - 5)
        assert presence.is_online(operator.pk)
        await socket.disconnect()

    run(scenario)


def test_an_agent_banned_while_connected_is_disconnected(widget, operator, monkeypatch, captured_events):
    monkeypatch.setattr(AgentConsumer, "heartbeat_seconds", 0.05)

    async def scenario():
        socket = await open_socket(operator.user)
        await database_sync_to_async(Agent.objects.filter(pk=operator.pk).update)(status=Agent.Status.BANNED)
        output = await socket.receive_output(timeout=TIMEOUT)
        assert output == {"type": "websocket.close", "code": 4403, "reason": mock.ANY}
        assert not presence.is_online(operator.pk)
        await socket.disconnect()

    run(scenario)
    assert presence_events(captured_events) == [("agent.online", operator.pk), ("agent.offline", operator.pk)]


def test_a_socket_whose_session_ended_is_disconnected(widget, operator, monkeypatch, captured_events):
    monkeypatch.setattr(AgentConsumer, "heartbeat_seconds", 0.05)

    async def scenario():
        socket = await open_socket(operator.user)
        await database_sync_to_async(Session.objects.all().delete)()  # logged out everywhere
        output = await socket.receive_output(timeout=TIMEOUT)
        assert output == {"type": "websocket.close", "code": 4401, "reason": mock.ANY}
        await socket.disconnect()

    run(scenario)
    assert presence_events(captured_events) == [("agent.online", operator.pk), ("agent.offline", operator.pk)]


# --- frames -------------------------------------------------------------------------------------------


def test_the_ready_frame_names_the_operator_and_widget(widget, operator):
    async def scenario():
        socket = await database_sync_to_async(communicator)(operator.user)
        await socket.connect(timeout=TIMEOUT)
        assert await socket.receive_json_from(timeout=TIMEOUT) == {
            "event": "ready",
            "operator_id": operator.pk,
            "widget_id": widget.pk,
            "status": "online",
        }
        await socket.disconnect()

    run(scenario)


def test_a_visitor_message_reaches_the_operator(widget, operator):
    async def scenario():
        socket = await open_socket(operator.user)
        message = await database_sync_to_async(visitor_says)(widget, "Hello there")
        frame = await socket.receive_json_from(timeout=TIMEOUT)
        assert frame["event"] == "message" and frame["chat_id"] == message.chat_id
        assert frame["message"]["id"] == message.pk
        assert frame["message"]["body"] == "Hello there"
        assert frame["message"]["author"]["kind"] == "client"
        await socket.disconnect()

    run(scenario)


def test_operator_messages_and_private_notes_reach_the_operator(widget, operator):
    chat = visitor_says(widget).chat

    async def scenario():
        socket = await open_socket(operator.user)
        reply = await database_sync_to_async(agent_says)(widget, chat, operator, "Hi")
        note = await database_sync_to_async(agent_says)(widget, chat, operator, "secret", "note")
        # The reply (the service's default source, the API) accepts the chat and makes it the
        # operator's: every console hears both, then the two messages.
        frames = [await socket.receive_json_from(timeout=TIMEOUT) for _ in range(4)]
        assert frames[0] == {"event": "chat", "chat_id": chat.pk, "status": "active"}
        assert [(f["chat_id"], f["agent_id"], f["by"]) for f in frames if f["event"] == "assigned"] == [
            (chat.pk, operator.pk, "api")
        ]
        assert [f["message"]["id"] for f in frames if f["event"] == "message"] == [reply.pk, note.pk]
        await socket.disconnect()

    run(scenario)


def test_a_chat_change_reaches_the_operator(widget, operator):
    chat = visitor_says(widget).chat

    async def scenario():
        socket = await open_socket(operator.user)
        await database_sync_to_async(chat_services.close_chat)(widget=widget, chat=chat)
        frame = await socket.receive_json_from(timeout=TIMEOUT)
        assert frame == {"event": "chat", "chat_id": chat.pk, "status": "expired"}
        await socket.disconnect()

    run(scenario)


def test_the_status_frame_switches_the_agent_between_online_and_away(widget, operator):
    async def scenario():
        socket = await open_socket(operator.user)
        await socket.send_json_to({"type": "status", "status": "away"})
        assert await socket.receive_json_from(timeout=TIMEOUT) == {"event": "status", "status": "away"}
        assert (await database_sync_to_async(Agent.objects.get)(pk=operator.pk)).status == Agent.Status.RELAXATION
        await socket.disconnect()
        again = await open_socket_frame(operator.user)
        assert again[1]["status"] == "away"
        await again[0].send_json_to({"type": "status", "status": "online"})
        assert await again[0].receive_json_from(timeout=TIMEOUT) == {"event": "status", "status": "online"}
        assert (await database_sync_to_async(Agent.objects.get)(pk=operator.pk)).status == Agent.Status.ACTIVE
        await again[0].disconnect()

    run(scenario)


def status_writes(operator) -> int:
    return AgentEvent.objects.filter(agent_id=operator.pk).count()


def test_a_status_change_is_answered_logged_and_purges_the_cache(widget, operator, purges):
    async def scenario():
        socket = await open_socket(operator.user)
        await socket.send_json_to({"type": "status", "status": "away"})
        assert await socket.receive_json_from(timeout=TIMEOUT) == {"event": "status", "status": "away"}
        assert await database_sync_to_async(status_writes)(operator) == 1
        await socket.disconnect()

    run(scenario)
    assert purges.count(widget.pk) >= 1


def test_the_status_already_stored_is_answered_and_writes_nothing(widget, operator, purges):
    async def scenario():
        socket = await open_socket(operator.user)
        for _ in range(5):
            await socket.send_json_to({"type": "status", "status": "online"})
            assert await socket.receive_json_from(timeout=TIMEOUT) == {"event": "status", "status": "online"}
        await socket.disconnect()

    run(scenario)
    assert status_writes(operator) == 0 and purges == []


def test_a_status_change_past_the_budget_is_rate_limited_writes_nothing_and_the_socket_stays_open(
    widget, operator, purges
):
    agent_services.STATUS_CHANGE_BUDGET.consume(widget.pk, operator.pk, cost=agent_services.STATUS_CHANGE_BUDGET.limit)

    async def scenario():
        socket = await open_socket(operator.user)
        await socket.send_json_to({"type": "status", "status": "away"})
        answer = await socket.receive_json_from(timeout=TIMEOUT)
        assert answer["event"] == "error" and answer["code"] == "rate_limited" and "retry in" in answer["detail"]
        assert (await database_sync_to_async(Agent.objects.get)(pk=operator.pk)).status == Agent.Status.ACTIVE
        await socket.send_json_to({"type": "ping"})
        assert await socket.receive_json_from(timeout=TIMEOUT) == {"event": "pong"}
        await socket.disconnect()

    run(scenario)
    assert status_writes(operator) == 0 and purges == []


@pytest.mark.parametrize(
    "frame",
    [
        {"type": "status"},
        {"type": "status", "status": "banned"},
        {"type": "status", "status": 1},
        {"type": "status", "status": {}},
        {"type": "status", "status": ["away"]},
    ],
)
def test_a_bad_status_frame_changes_nothing(widget, operator, frame):
    async def scenario():
        socket = await open_socket(operator.user)
        await socket.send_json_to(frame)
        answer = await socket.receive_json_from(timeout=TIMEOUT)
        assert answer["event"] == "error" and answer["code"] == "invalid_status"
        assert (await database_sync_to_async(Agent.objects.get)(pk=operator.pk)).status == Agent.Status.ACTIVE
        await socket.disconnect()

    run(scenario)


def test_frames_of_another_widget_never_arrive(widget, other_widget, operator):
    async def scenario():
        socket = await open_socket(operator.user)
        await database_sync_to_async(visitor_says)(other_widget, "elsewhere")
        assert await socket.receive_nothing(timeout=0.3)
        await socket.disconnect()

    run(scenario)


def test_an_operator_of_several_widgets_picks_one(widget, other_widget, operator):
    HumanAgentFactory(widget=other_widget, user=operator.user)

    async def scenario():
        assert await close_code(operator.user) == 4400
        socket = await open_socket(operator.user, f"widget={other_widget.pk}")
        await database_sync_to_async(visitor_says)(widget, "not yours here")
        assert await socket.receive_nothing(timeout=0.3)
        message = await database_sync_to_async(visitor_says)(other_widget, "yours")
        assert (await socket.receive_json_from(timeout=TIMEOUT))["message"]["id"] == message.pk
        await socket.disconnect()

    run(scenario)


def test_a_user_past_the_socket_cap_is_refused_with_1008_until_a_socket_closes(
    widget, other_widget, operator, monkeypatch, captured_events
):
    monkeypatch.setattr("apps.agents.consumers.SOCKETS_PER_USER", 2)
    HumanAgentFactory(widget=other_widget, user=operator.user)
    colleague = HumanAgentFactory(widget=widget)

    async def scenario():
        # the cap counts the user's sockets over every widget the user serves
        first = await open_socket(operator.user, f"widget={widget.pk}")
        second = await open_socket(operator.user, f"widget={other_widget.pk}")
        assert await close_code(operator.user, f"widget={widget.pk}") == 1008
        # another user's sockets are their own
        await (await open_socket(colleague.user)).disconnect()
        await second.disconnect()
        third = await open_socket(operator.user, f"widget={widget.pk}")
        await first.disconnect()
        await third.disconnect()

    run(scenario)
    # the refused socket never counted for presence: the agent went online once
    online = [d["operator_id"] for t, d in captured_events() if t == "agent.online"]
    assert online.count(operator.pk) == 1


@pytest.mark.parametrize(
    "frame, code",
    [
        ({"text": "not json"}, "invalid_json"),
        ({"text": "[" * 2000 + "]" * 2000}, "invalid_json"),
        ({"text": json.dumps(["ping"])}, "invalid_frame"),
        ({"text": json.dumps({"type": "typing"})}, "unknown_frame"),
        ({"text": json.dumps({"type": ["ping"]})}, "unknown_frame"),
        ({"text": json.dumps({"type": {"ping": 1}})}, "unknown_frame"),
        ({"bytes": b"\x00\x01"}, "invalid_frame"),
    ],
)
def test_bad_frames_get_an_error_and_the_socket_stays_open(widget, operator, frame, code):
    async def scenario():
        socket = await open_socket(operator.user)
        await socket.send_input({"type": "websocket.receive", **frame})
        answer = await socket.receive_json_from(timeout=TIMEOUT)
        assert answer["event"] == "error" and answer["code"] == code
        await socket.send_json_to({"type": "ping"})
        assert await socket.receive_json_from(timeout=TIMEOUT) == {"event": "pong"}
        await socket.disconnect()

    run(scenario)


def test_a_frame_over_the_limit_closes_the_socket_with_1009(widget, operator):
    async def scenario():
        socket = await open_socket(operator.user)
        await socket.send_to(text_data=json.dumps({"type": "ping", "pad": "x" * 5000}))
        closed = await socket.receive_output(timeout=TIMEOUT)
        assert (closed["type"], closed["code"]) == ("websocket.close", 1009)
        await socket.disconnect()

    run(scenario)


def test_a_frame_flood_closes_the_socket_with_1008(widget, operator):
    async def scenario():
        socket = await open_socket(operator.user)
        for _ in range(31):
            await socket.send_json_to({"type": "ping"})
        answers = [await socket.receive_output(timeout=TIMEOUT) for _ in range(31)]
        assert [answer["type"] for answer in answers[:30]] == ["websocket.send"] * 30
        assert (answers[-1]["type"], answers[-1]["code"]) == ("websocket.close", 1008)
        await socket.disconnect()

    run(scenario)


# --- refusals -----------------------------------------------------------------------------------------


def test_an_unauthenticated_socket_is_refused(widget, operator, captured_events):
    async def scenario():
        assert await close_code(None) == 4401

    run(scenario)
    assert presence.online_agent_ids(widget.pk) == set()
    assert presence_events(captured_events) == []


def test_a_user_who_is_not_an_operator_of_the_widget_is_refused(widget, other_widget, captured_events):
    stranger = HumanAgentFactory(widget=other_widget)
    nobody = UserFactory()

    async def scenario():
        assert await close_code(stranger.user, f"widget={widget.pk}") == 4403
        assert await close_code(nobody) == 4403

    run(scenario)
    assert presence.online_agent_ids(widget.pk) == set()
    assert presence_events(captured_events) == []


def test_a_banned_agent_is_refused(widget):
    banned = HumanAgentFactory(widget=widget, status=Agent.Status.BANNED)

    async def scenario():
        assert await close_code(banned.user) == 4403

    run(scenario)


@pytest.mark.parametrize("value", ["abc", "%C2%B2"], ids=["letters", "superscript"])
def test_a_bad_widget_parameter_is_refused(widget, operator, value):
    async def scenario():
        assert await close_code(operator.user, f"widget={value}") == 4400

    run(scenario)


# "²" and "５" pass str.isdigit(); int() crashes on the first and reads the second as 5.
@pytest.mark.parametrize("value", ["%C2%B2", "%EF%BC%95", "+1", "0", "10000000000000000000"])
def test_a_widget_parameter_of_anything_but_an_ascii_id_is_refused(widget, operator, value):
    async def scenario():
        assert await close_code(operator.user, f"widget={value}") == 4400

    run(scenario)


def test_a_foreign_origin_is_refused_before_the_handshake(widget, operator):
    async def scenario():
        socket = await database_sync_to_async(communicator)(operator.user, "", (b"origin", b"https://evil.example"))
        connected, _ = await socket.connect(timeout=TIMEOUT)
        assert not connected

    run(scenario)
    assert presence.online_agent_ids(widget.pk) == set()


# --- metrics ----------------------------------------------------------------------------------------------


def test_open_operator_sockets_are_counted_in_the_metrics(widget, operator):
    read = database_sync_to_async(lambda: sample("chatwidget_websockets_open", kind="operator"))

    async def scenario():
        before = await read()
        first = await open_socket(operator.user)
        second = await open_socket(operator.user)
        assert await read() == before + 2
        await first.disconnect()
        assert await read() == before + 1
        await second.disconnect()
        assert await read() == before

    run(scenario)
