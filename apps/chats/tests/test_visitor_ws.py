"""The visitor websocket /ws/visitor/{button_guid}/?session=<token>[&since=<id>], end to end through
config.asgi.application and the in-memory channel layer. Transactions really commit here, so the
pushes that apps.chats.realtime sends after commit really go out."""

import asyncio
import json
import threading
from unittest import mock

import pytest
from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async
from channels.layers import InMemoryChannelLayer, get_channel_layer

from apps.chats import services as chat_services
from apps.chats.models import Chat, Message
from apps.chats.realtime import widget_group
from apps.chats.tests.factories import AgentFactory
from apps.chats.visitor import services as visitor_services
from apps.core import websocket as core_websocket
from config.asgi import application
from tests.support.metrics import sample
from tests.support.websocket import WebsocketCommunicator

pytestmark = pytest.mark.django_db(transaction=True)

ORIGIN = [(b"origin", b"http://testserver")]
TIMEOUT = 3


@pytest.fixture(autouse=True)
def memory_layer(settings):
    """A fresh in-memory layer per test (the setting change drops the cached one)."""
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}


@pytest.fixture
def visitor(widget):
    session, token = visitor_services.start_session(widget=widget, name="Anna")
    return session.contact, token


@pytest.fixture
def agent(widget):
    return AgentFactory(widget=widget, name="Olga")


def run(scenario):
    async_to_sync(scenario)()


def path(widget, token, **params) -> str:
    query = "&".join(f"{k}={v}" for k, v in {"session": token, **params}.items())
    return f"/ws/visitor/{widget.button_guid}/?{query}"


async def open_socket(url: str) -> WebsocketCommunicator:
    socket = WebsocketCommunicator(application, url, headers=ORIGIN)
    connected, _ = await socket.connect(timeout=TIMEOUT)
    assert connected
    return socket


async def close_code(url: str) -> int:
    socket = WebsocketCommunicator(application, url, headers=ORIGIN)
    connected, _ = await socket.connect(timeout=TIMEOUT)
    assert connected  # accepted, then closed with a code the browser can read
    output = await socket.receive_output(timeout=TIMEOUT)
    assert output["type"] == "websocket.close"
    return output["code"]


def visitor_says(widget, contact, body="Hello") -> Message:
    return visitor_services.send_message(widget=widget, contact=contact, data=chat_services.MessageInput(body=body))


def agent_says(widget, chat, agent, body="Hi, how can I help?", visibility="public") -> Message:
    return chat_services.post_agent_message(
        widget=widget, chat=chat, agent=agent, data=chat_services.MessageInput(body=body, visibility=visibility)
    )


async def message_frame(socket) -> dict:
    frame = await socket.receive_json_from(timeout=TIMEOUT)
    assert frame["event"] == "message", frame
    return frame["message"]


# --- live frames ------------------------------------------------------------------------------------


def test_operator_message_arrives_as_a_frame(widget, visitor, agent):
    contact, token = visitor
    chat = visitor_says(widget, contact).chat

    async def scenario():
        socket = await open_socket(path(widget, token))
        reply = await database_sync_to_async(agent_says)(widget, chat, agent)
        frame = await socket.receive_json_from(timeout=TIMEOUT)
        assert frame["event"] == "message" and frame["chat_id"] == chat.pk
        assert frame["message"]["id"] == reply.pk
        assert frame["message"]["body"] == "Hi, how can I help?"
        assert frame["message"]["author"] == {"kind": "agent", "name": "Olga"}
        await socket.disconnect()

    run(scenario)


def test_private_notes_never_reach_the_visitor(widget, visitor, agent):
    contact, token = visitor
    chat = visitor_says(widget, contact).chat

    async def scenario():
        socket = await open_socket(path(widget, token))
        for visibility in ("note", "email", "internal"):
            await database_sync_to_async(agent_says)(widget, chat, agent, f"secret {visibility}", visibility)
        public = await database_sync_to_async(agent_says)(widget, chat, agent, "visible")
        assert (await message_frame(socket))["id"] == public.pk
        assert await socket.receive_nothing(timeout=0.2)
        await socket.disconnect()

    run(scenario)


def test_agent_typing_arrives(widget, visitor):
    contact, token = visitor
    chat = visitor_says(widget, contact).chat

    async def scenario():
        socket = await open_socket(path(widget, token))
        forwarded = await database_sync_to_async(chat_services.note_typing)(
            widget=widget, chat=chat, state="start", by="agent"
        )
        assert forwarded
        frame = await socket.receive_json_from(timeout=TIMEOUT)
        assert frame == {"event": "typing", "chat_id": chat.pk, "state": "start", "by": "agent"}
        await socket.disconnect()

    run(scenario)


def test_socket_opened_before_the_first_message_receives_the_room(widget, visitor, agent):
    contact, token = visitor

    async def scenario():
        socket = await open_socket(path(widget, token))
        first = await database_sync_to_async(visitor_says)(widget, contact, "first")
        mine = await message_frame(socket)
        assert mine["id"] == first.pk and mine["author"]["kind"] == "client"
        reply = await database_sync_to_async(agent_says)(widget, first.chat, agent)
        assert (await message_frame(socket))["id"] == reply.pk
        assert await socket.receive_nothing(timeout=0.2)  # the first message went out once
        await socket.disconnect()

    run(scenario)


def test_socket_opened_before_an_offline_form_receives_the_room(widget, visitor, agent):
    contact, token = visitor

    async def scenario():
        socket = await open_socket(path(widget, token))
        form = await database_sync_to_async(visitor_services.submit_offline_message)(
            widget=widget, contact=contact, message="Call me back"
        )
        assert (await message_frame(socket))["id"] == form.pk
        reply = await database_sync_to_async(agent_says)(widget, form.chat, agent)
        assert (await message_frame(socket))["id"] == reply.pk
        await socket.disconnect()

    run(scenario)


# --- reconnect -------------------------------------------------------------------------------------


def test_reconnect_with_since_replays_missed_messages_oldest_first(widget, visitor, agent):
    contact, token = visitor
    seen = visitor_says(widget, contact, "before")
    chat = seen.chat
    missed = [agent_says(widget, chat, agent, "one"), agent_says(widget, chat, agent, "two")]
    agent_says(widget, chat, agent, "private", visibility="note")
    missed.append(visitor_says(widget, contact, "three"))

    async def scenario():
        socket = await open_socket(path(widget, token, since=seen.pk))
        replayed = [await message_frame(socket) for _ in missed]
        assert [m["id"] for m in replayed] == [m.pk for m in missed]
        assert [m["body"] for m in replayed] == ["one", "two", "three"]
        assert await socket.receive_nothing(timeout=0.2)
        live = await database_sync_to_async(agent_says)(widget, chat, agent, "live")
        assert (await message_frame(socket))["id"] == live.pk
        await socket.disconnect()

    run(scenario)


def test_connect_without_since_replays_nothing(widget, visitor):
    contact, token = visitor
    visitor_says(widget, contact)

    async def scenario():
        socket = await open_socket(path(widget, token))
        assert await socket.receive_nothing(timeout=0.2)
        await socket.disconnect()

    run(scenario)


# --- refusals --------------------------------------------------------------------------------------


def test_bad_session_is_closed_with_4401(widget, visitor, other_widget):
    _, token = visitor
    _, foreign = visitor_services.start_session(widget=other_widget)

    async def scenario():
        assert await close_code(f"/ws/visitor/{widget.button_guid}/") == 4401
        assert await close_code(path(widget, "cvs_" + "A" * 43)) == 4401
        assert await close_code(path(widget, "junk")) == 4401
        assert await close_code(path(widget, foreign)) == 4401

    run(scenario)


def test_idle_session_is_closed_with_4401(widget, visitor, settings):
    from datetime import timedelta

    from django.utils import timezone

    from apps.chats.models import VisitorSession
    from apps.chats.visitor import auth

    _, token = visitor
    VisitorSession.objects.filter(token_hash=auth.hash_token(token)).update(
        last_seen_at=timezone.now() - timedelta(days=settings.VISITOR_SESSION_IDLE_DAYS, minutes=1)
    )

    async def scenario():
        assert await close_code(path(widget, token)) == 4401

    run(scenario)


def test_unknown_widget_is_closed_with_4404(visitor):
    _, token = visitor

    async def scenario():
        assert await close_code(f"/ws/visitor/{'0' * 32}/?session={token}") == 4404

    run(scenario)


@pytest.mark.parametrize("since", ["abc", "%C2%B2", "%D9%A1%D9%A2"], ids=["letters", "superscript", "arabic-indic"])
def test_bad_since_is_closed_with_4400_and_takes_no_slot(widget, visitor, since):
    _, token = visitor

    async def scenario():
        with RoundTrips() as counted:
            assert await close_code(path(widget, token, since=since)) == 4400
        assert counted.cache_calls == []

    run(scenario)


# "²" and "５" pass str.isdigit(); int() crashes on the first and reads the second as 5.
@pytest.mark.parametrize("since", ["%C2%B2", "%EF%BC%95", "+5", "%205", "10000000000000000000"])
def test_since_of_anything_but_ascii_digits_in_range_is_closed_with_4400(widget, visitor, since):
    _, token = visitor

    async def scenario():
        assert await close_code(path(widget, token, since=since)) == 4400

    run(scenario)


# --- client frames ---------------------------------------------------------------------------------


def test_visitor_typing_frame_reaches_the_operators(widget, visitor):
    contact, token = visitor
    chat = visitor_says(widget, contact).chat

    async def scenario():
        layer = get_channel_layer()
        console = await layer.new_channel()
        await layer.group_add(widget_group(widget.pk), console)
        socket = await open_socket(path(widget, token))
        await socket.send_json_to({"type": "typing", "state": "start"})
        pushed = await layer.receive(console)
        assert pushed["frame"] == {"event": "typing", "chat_id": chat.pk, "state": "start", "by": "client"}
        assert await socket.receive_nothing(timeout=0.2)  # the visitor's own typing is not echoed
        await socket.disconnect()

    run(scenario)


def test_seen_frame_marks_operator_messages_seen(widget, visitor, agent):
    contact, token = visitor
    chat = visitor_says(widget, contact).chat
    reply = agent_says(widget, chat, agent)

    async def scenario():
        socket = await open_socket(path(widget, token))
        await socket.send_json_to({"type": "seen", "message_id": reply.pk})
        frame = await socket.receive_json_from(timeout=TIMEOUT)
        assert frame == {"event": "seen", "chat_id": chat.pk, "message_id": reply.pk, "by": "client"}
        await socket.disconnect()

    run(scenario)
    reply.refresh_from_db()
    assert reply.seen_at is not None


def test_seen_of_a_message_outside_the_conversation_is_an_error_frame(widget, visitor, agent):
    contact, token = visitor
    chat = visitor_says(widget, contact).chat
    note = agent_says(widget, chat, agent, "private", visibility="note")
    _, other_token = visitor_services.start_session(widget=widget)

    async def scenario():
        socket = await open_socket(path(widget, token))
        await socket.send_json_to({"type": "seen", "message_id": note.pk})
        assert (await socket.receive_json_from(timeout=TIMEOUT))["code"] == "not_found"
        await socket.disconnect()
        stranger = await open_socket(path(widget, other_token))
        await stranger.send_json_to({"type": "seen", "message_id": chat.last_message_id})
        assert (await stranger.receive_json_from(timeout=TIMEOUT))["code"] == "not_found"
        await stranger.disconnect()

    run(scenario)
    assert Message.objects.get(pk=note.pk).seen_at is None


def test_a_socket_is_closed_with_4401_once_its_contacts_erasure_is_accepted(widget, visitor, monkeypatch):
    from apps.privacy import services as privacy

    monkeypatch.setattr(privacy, "_queue", lambda pending_id: None)  # the erasure accepted, not yet run
    contact, token = visitor
    visitor_says(widget, contact)

    async def scenario():
        socket = await open_socket(path(widget, token))
        await database_sync_to_async(privacy.request_contact_erasure)(widget=widget, contact=contact)
        closed = await socket.receive_output(timeout=TIMEOUT)
        assert (closed["type"], closed["code"]) == ("websocket.close", 4401)

    run(scenario)


def test_a_socket_opened_before_the_erasure_neither_types_nor_marks_seen(widget, visitor, agent, monkeypatch):
    from apps.chats import realtime
    from apps.privacy import services as privacy

    monkeypatch.setattr(privacy, "_queue", lambda pending_id: None)  # the erasure accepted, not yet run
    # the frames below reach the socket before its close does
    monkeypatch.setattr(realtime, "group_send", lambda groups, message: None)
    contact, token = visitor
    chat = visitor_says(widget, contact).chat
    reply = agent_says(widget, chat, agent)

    async def scenario():
        layer = get_channel_layer()
        console = await layer.new_channel()
        await layer.group_add(widget_group(widget.pk), console)
        socket = await open_socket(path(widget, token))
        await database_sync_to_async(privacy.request_contact_erasure)(widget=widget, contact=contact)
        await socket.send_json_to({"type": "typing", "state": "start", "draft": "my address is"})
        await socket.send_json_to({"type": "seen", "message_id": reply.pk})
        frame = await socket.receive_json_from(timeout=TIMEOUT)
        assert frame["event"] == "error" and frame["code"] == "not_found"
        with pytest.raises(TimeoutError):  # no typing reached the operators
            await asyncio.wait_for(layer.receive(console), 0.5)
        await socket.disconnect()

    run(scenario)
    reply.refresh_from_db()
    assert reply.seen_at is None
    assert Chat.objects.get(pk=chat.pk).last_client_typing_at is None


@pytest.mark.parametrize(
    ("sent", "code"),
    [
        ({"type": "dance"}, "unknown_frame"),
        ({"state": "start"}, "unknown_frame"),
        ({"type": ["typing"], "state": "start"}, "unknown_frame"),
        (["typing"], "invalid_frame"),
        ({"type": "typing", "state": "maybe"}, "invalid_frame"),
        ({"type": "seen", "message_id": "1"}, "invalid_frame"),
    ],
)
def test_bad_client_frames_get_an_error_frame_and_the_socket_stays_open(widget, visitor, sent, code):
    _, token = visitor

    async def scenario():
        socket = await open_socket(path(widget, token))
        await socket.send_json_to(sent)
        frame = await socket.receive_json_from(timeout=TIMEOUT)
        assert frame["event"] == "error" and frame["code"] == code
        await socket.send_json_to({"type": "ping"})
        assert await socket.receive_json_from(timeout=TIMEOUT) == {"event": "pong"}
        await socket.disconnect()

    run(scenario)


def test_malformed_and_binary_frames_do_not_crash_the_socket(widget, visitor):
    _, token = visitor

    async def scenario():
        socket = await open_socket(path(widget, token))
        await socket.send_to(text_data="{not json")
        assert (await socket.receive_json_from(timeout=TIMEOUT))["code"] == "invalid_json"
        await socket.send_to(bytes_data=b"\x00\x01")
        assert (await socket.receive_json_from(timeout=TIMEOUT))["code"] == "invalid_frame"
        await socket.send_json_to({"type": "ping"})
        assert await socket.receive_json_from(timeout=TIMEOUT) == {"event": "pong"}
        await socket.disconnect()

    run(scenario)


def test_a_frame_over_the_limit_closes_the_socket_with_1009(widget, visitor):
    _, token = visitor

    async def scenario():
        socket = await open_socket(path(widget, token))
        await socket.send_to(text_data=json.dumps({"type": "ping", "pad": "x" * 5000}))
        closed = await socket.receive_output(timeout=TIMEOUT)
        assert (closed["type"], closed["code"]) == ("websocket.close", 1009)
        await socket.send_json_to({"type": "ping"})
        assert await socket.receive_nothing(timeout=0.2)  # nothing more is read
        await socket.disconnect()

    run(scenario)


def test_typing_before_the_room_exists_is_ignored(widget, visitor):
    _, token = visitor

    async def scenario():
        socket = await open_socket(path(widget, token))
        await socket.send_json_to({"type": "typing", "state": "start"})
        assert await socket.receive_nothing(timeout=0.2)
        await socket.disconnect()

    run(scenario)
    assert not Chat.objects.filter(widget=widget).exists()


def test_too_many_frames_close_the_socket_with_1008(widget, visitor):
    _, token = visitor

    async def scenario():
        socket = await open_socket(path(widget, token))
        for _ in range(30):
            await socket.send_json_to({"type": "ping"})
            assert await socket.receive_json_from(timeout=TIMEOUT) == {"event": "pong"}
        await socket.send_json_to({"type": "ping"})
        closed = await socket.receive_output(timeout=TIMEOUT)
        assert (closed["type"], closed["code"]) == ("websocket.close", 1008)
        await socket.disconnect()

    run(scenario)


@pytest.mark.parametrize(
    "frame",
    [{"bytes": b"\x00\x01"}, {"text": "{not json"}, {"text": json.dumps({"type": "dance"})}],
    ids=["binary", "malformed", "unknown"],
)
def test_bad_frames_count_toward_the_frame_rate(widget, visitor, frame):
    _, token = visitor

    async def scenario():
        socket = await open_socket(path(widget, token))
        for _ in range(30):
            await socket.send_input({"type": "websocket.receive", **frame})
            assert (await socket.receive_json_from(timeout=TIMEOUT))["event"] == "error"
        await socket.send_json_to({"type": "ping"})
        closed = await socket.receive_output(timeout=TIMEOUT)
        assert (closed["type"], closed["code"]) == ("websocket.close", 1008)
        await socket.disconnect()

    run(scenario)


# --- sockets per session and per address ------------------------------------------------------------


async def open_or_code(url: str, headers=()) -> tuple[WebsocketCommunicator, int | None]:
    """The socket and None when it stays open, or the close code it got right after the handshake."""
    socket = WebsocketCommunicator(application, url, headers=[*ORIGIN, *headers])
    connected, _ = await socket.connect(timeout=TIMEOUT)
    assert connected
    await socket.send_json_to({"type": "ping"})
    answer = await socket.receive_output(timeout=TIMEOUT)
    if answer["type"] == "websocket.close":
        return socket, answer["code"]
    assert json.loads(answer["text"]) == {"event": "pong"}
    return socket, None


def test_one_session_holds_at_most_ten_sockets(widget, visitor):
    _, token = visitor

    async def scenario():
        # given ten open sockets of one session
        opened = [await open_or_code(path(widget, token)) for _ in range(10)]
        assert [code for _, code in opened] == [None] * 10
        # when an eleventh is opened, then it is closed with 1008
        extra, code = await open_or_code(path(widget, token))
        assert code == 1008
        await extra.disconnect()
        # when one of the ten closes, then a new one may open
        await opened[0][0].disconnect()
        again, code = await open_or_code(path(widget, token))
        assert code is None
        for socket, _ in [*opened[1:], (again, None)]:
            await socket.disconnect()

    run(scenario)


def test_one_address_holds_at_most_its_cap_of_sockets_whatever_the_sessions(widget, settings):
    # given a cap of two per address, three visitors behind one address and a fourth elsewhere
    settings.VISITOR_SOCKETS_PER_ADDRESS = 2
    settings.TRUSTED_PROXY_HOPS = 1
    tokens = [visitor_services.start_session(widget=widget)[1] for _ in range(4)]
    here = [(b"x-forwarded-for", b"198.51.100.7")]
    there = [(b"x-forwarded-for", b"198.51.100.8")]

    async def scenario():
        first, first_code = await open_or_code(path(widget, tokens[0]), here)
        second, second_code = await open_or_code(path(widget, tokens[1]), here)
        third, third_code = await open_or_code(path(widget, tokens[2]), here)
        elsewhere, elsewhere_code = await open_or_code(path(widget, tokens[3]), there)
        # then the third from that address is closed with 1008, the other address is not affected
        assert (first_code, second_code, third_code, elsewhere_code) == (None, None, 1008, None)
        for socket in (first, second, third, elsewhere):
            await socket.disconnect()

    run(scenario)


def test_the_slots_of_a_closed_refused_socket_are_free_again(widget, settings):
    # given a cap of one per address
    settings.VISITOR_SOCKETS_PER_ADDRESS = 1
    _, token = visitor_services.start_session(widget=widget)

    async def scenario():
        # when a socket opens and closes, twice
        for _ in range(2):
            socket, code = await open_or_code(path(widget, token))
            assert code is None
            await socket.disconnect()

    run(scenario)


def test_a_cleanup_step_that_fails_still_frees_the_sockets_slots(widget, visitor, settings, monkeypatch):
    """Leaving the groups fails on the way out (the layer's Redis timing out): the slots are freed all
    the same, and no refresh of them outlives the socket."""
    settings.VISITOR_SOCKETS_PER_ADDRESS = 1
    _, token = visitor

    async def failing_discard(self, group, channel):
        raise ConnectionError("layer down")

    monkeypatch.setattr(InMemoryChannelLayer, "group_discard", failing_discard)

    def refreshers() -> list:
        """The open sockets whose slots the process's refresher renews."""
        return list(core_websocket._refresher.holders)

    async def scenario():
        socket, code = await open_or_code(path(widget, token))
        assert code is None and len(refreshers()) == 1
        await socket.disconnect()
        again, code = await open_or_code(path(widget, token))
        assert code is None
        await again.disconnect()
        assert refreshers() == []

    run(scenario)


def test_a_frame_pushed_as_the_client_leaves_still_frees_the_sockets_slot(widget, visitor, agent, settings):
    """The server raises on a send once the client is gone, while the disconnect waits in the queue:
    the frame is dropped and the disconnect frees the slot, so the visitor can open a socket again."""
    settings.VISITOR_SOCKETS_PER_ADDRESS = 1
    contact, token = visitor
    chat = visitor_says(widget, contact).chat

    async def scenario():
        socket, code = await open_or_code(path(widget, token))
        assert code is None
        socket.gone = True
        await database_sync_to_async(agent_says)(widget, chat, agent)  # pushed to the room: the send raises
        await socket.refused_a_send(TIMEOUT)
        await socket.disconnect(code=1005)
        again, code = await open_or_code(path(widget, token))
        assert code is None
        await again.disconnect()

    run(scenario)


# --- metrics ----------------------------------------------------------------------------------------------


def test_open_visitor_sockets_are_counted_in_the_metrics(widget, visitor):
    _, token = visitor
    read = database_sync_to_async(lambda: sample("chatwidget_websockets_open", kind="visitor"))

    async def scenario():
        before = await read()
        socket = await open_socket(path(widget, token))
        assert await read() == before + 1
        await socket.disconnect()
        assert await read() == before

    run(scenario)


# --- the cost of a connect ---------------------------------------------------------------------------


class RoundTrips:
    """Counts the database statements and cache calls made while the block runs, on every thread."""

    CACHE_CALLS = ("get", "get_many", "add", "set", "set_many", "touch", "delete", "delete_many", "has_key", "incr")

    def __init__(self):
        self.queries: list[str] = []
        self.cache_calls: list[str] = []
        self._depth = threading.local()

    def __enter__(self):
        from django.core.cache import caches
        from django.db.backends import utils

        self._patches = []
        original_execute = utils.CursorWrapper.execute

        def execute(cursor, sql, params=None):
            self.queries.append(sql)
            return original_execute(cursor, sql, params)

        self._patches.append(mock.patch.object(utils.CursorWrapper, "execute", execute))
        backend = type(caches["default"])
        for name in self.CACHE_CALLS:
            original = getattr(backend, name)

            def counted(this, *args, _name=name, _original=original, **kwargs):
                # the calls a backend makes to itself (the file cache's add is has_key and set) are
                # part of the caller's one call
                depth = getattr(self._depth, "n", 0)
                if not depth:
                    self.cache_calls.append(_name)
                self._depth.n = depth + 1
                try:
                    return _original(this, *args, **kwargs)
                finally:
                    self._depth.n = depth

            self._patches.append(mock.patch.object(backend, name, counted))
        for patch in self._patches:
            patch.start()
        return self

    def __exit__(self, *exc):
        for patch in reversed(self._patches):
            patch.stop()


@pytest.mark.parametrize("has_room", [True, False])
def test_a_connect_reads_the_session_and_takes_its_slots_in_a_few_round_trips(widget, visitor, has_room):
    # given a visitor whose session was just used (nothing to touch), with or without a room
    contact, token = visitor
    if has_room:
        visitor_says(widget, contact)

    async def scenario():
        # when its socket connects, up to the first frame it answers
        with RoundTrips() as counted:
            socket = await open_socket(path(widget, token))
            await socket.send_json_to({"type": "ping"})
            assert (await socket.receive_json_from(timeout=TIMEOUT))["event"] == "pong"
        await socket.disconnect()
        # then the visitor API's three look-ups find the widget, the session with its contact, and the
        # room (a fourth looks again for a room made meanwhile, when there was none), and one cache
        # call leases each of its two slots
        assert len(counted.queries) == (3 if has_room else 4), counted.queries
        assert counted.cache_calls == ["add", "add"]

    run(scenario)
