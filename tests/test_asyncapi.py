"""The AsyncAPI document of the websockets (/api/v1/asyncapi.yaml, apps.chats.asyncapi) documents
what the code really sends and reads:

- every `"event": ...` frame any module of ours builds is a documented server frame (frames added
  later by other apps included: the scan reads the source), and every client frame type any
  websocket consumer handles is a documented client frame;
- per socket, the documented client frames are exactly the consumer's handlers, and the close codes
  are the consumers' constants;
- real frames from a real visitor socket validate against their documented payloads.

CI validates the served document with the AsyncAPI Initiative's parser (.ci/asyncapi.sh).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import pytest
import yaml
from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async

from apps.agents import consumers as agent_consumers
from apps.agents import services as agent_services
from apps.chats import asyncapi
from apps.chats import services as chat_services
from apps.chats.tests.factories import AgentFactory
from apps.chats.visitor import consumers as visitor_consumers
from apps.chats.visitor import services as visitor_services
from apps.core.websocket import FramedJsonConsumer
from config import routing
from config.asgi import application
from tests.support.websocket import WebsocketCommunicator

ROOT = Path(__file__).resolve().parents[1]
EVENT_LITERAL = re.compile(r"""["']event["']\s*:\s*["']([a-z_.]+)["']""")


def served() -> dict:
    return asyncapi.document()


def documented_server_events(doc: dict) -> dict[str, dict]:
    return {m["payload"]["properties"]["event"]["const"]: m["payload"] for m in asyncapi.SERVER_FRAMES.values()}


def documented_client_types(names: list[str]) -> set[str]:
    return {asyncapi.CLIENT_FRAMES[name]["payload"]["properties"]["type"]["const"] for name in names}


def source_files():
    for path in (ROOT / "apps").rglob("*.py"):
        if "tests" in path.parts or "migrations" in path.parts or path.name == "asyncapi.py":
            continue
        yield path


def all_consumers() -> set[type]:
    found, todo = set(), [FramedJsonConsumer]
    while todo:
        for sub in todo.pop().__subclasses__():
            found.add(sub)
            todo.append(sub)
    return found


def handled_types(cls: type) -> set[str]:
    return set(cls.frame_handlers(cls.__new__(cls)))


# --- the document against the code --------------------------------------------------------------------


def test_every_frame_event_the_code_builds_is_documented():
    built: dict[str, list[str]] = {}
    for path in source_files():
        for event in EVENT_LITERAL.findall(path.read_text(encoding="utf-8")):
            built.setdefault(event, []).append(str(path.relative_to(ROOT)))
    assert {"message", "typing", "seen", "chat", "ready", "pong", "error"} <= set(built)  # the scan works
    missing = {event: where for event, where in built.items() if event not in documented_server_events(served())}
    assert not missing, f"frames sent but not in the AsyncAPI document: {missing}"


def test_every_client_frame_a_consumer_handles_is_documented():
    assert routing.websocket_urlpatterns  # the routed consumers are imported
    documented = documented_client_types(list(asyncapi.CLIENT_FRAMES))
    for cls in all_consumers():
        assert handled_types(cls) <= documented, (cls, handled_types(cls) - documented)


def test_each_socket_documents_exactly_its_client_frames():
    assert handled_types(visitor_consumers.VisitorConsumer) == documented_client_types(asyncapi.VISITOR_READS)
    assert handled_types(agent_consumers.AgentConsumer) == documented_client_types(asyncapi.AGENT_READS)


def test_close_codes_are_the_consumers():
    agent_codes = {
        agent_consumers.CLOSE_BAD_REQUEST,
        agent_consumers.CLOSE_UNAUTHORIZED,
        agent_consumers.CLOSE_FORBIDDEN,
    }
    assert agent_codes <= set(asyncapi.AGENT_CLOSE_CODES)
    assert asyncapi.AGENT_SOCKETS_PER_USER == agent_consumers.SOCKETS_PER_USER
    budget = agent_services.STATUS_CHANGE_BUDGET
    assert (budget.limit, budget.window) == (asyncapi.AGENT_STATUS_CHANGES_PER_MINUTE, 60)
    visitor_codes = {
        visitor_consumers.CLOSE_BAD_REQUEST,
        visitor_consumers.CLOSE_UNAUTHORIZED,
        visitor_consumers.CLOSE_NOT_FOUND,
        1008,
        1009,
    }
    assert visitor_codes == set(asyncapi.VISITOR_CLOSE_CODES)


def test_channel_addresses_are_the_routed_paths():
    patterns = [p.pattern.regex.pattern for p in routing.websocket_urlpatterns]
    for channel in served()["channels"].values():
        concrete = re.sub(r"\{[^}]+\}", "abc123", channel["address"])
        assert any(re.match(pattern, concrete.lstrip("/")) for pattern in patterns), channel["address"]


def test_operations_reference_only_their_channels_messages():
    doc = served()
    for name, operation in doc["operations"].items():
        channel = operation["channel"]["$ref"].rsplit("/", 1)[-1]
        for ref in operation["messages"]:
            prefix = f"#/channels/{channel}/messages/"
            assert ref["$ref"].startswith(prefix), (name, ref)
            assert ref["$ref"].removeprefix(prefix) in doc["channels"][channel]["messages"], (name, ref)


@pytest.mark.django_db
def test_the_document_is_served_as_yaml(client):
    response = client.get("/api/v1/asyncapi.yaml", HTTP_HOST="127.0.0.1")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/yaml")
    doc = yaml.safe_load(response.content)
    assert doc["asyncapi"].startswith("3.") and set(doc["channels"]) == {"visitor", "agent"}
    assert doc == json.loads(json.dumps(asyncapi.document(host="127.0.0.1", protocol="ws")))


# --- real frames against the document -----------------------------------------------------------------


def check(frame: dict) -> None:
    schema = documented_server_events(served())[frame["event"]]
    jsonschema.validate(frame, schema, cls=jsonschema.Draft202012Validator)


@pytest.fixture
def memory_layer(settings):
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}


@pytest.mark.django_db(transaction=True)
def test_real_visitor_socket_frames_match_the_document(widget, memory_layer):
    session, token = visitor_services.start_session(widget=widget, name="Anna")
    contact = session.contact
    first = visitor_services.send_message(widget=widget, contact=contact, data=chat_services.MessageInput(body="Hello"))
    chat = first.chat
    agent = AgentFactory(widget=widget, name="Olga")
    url = f"/ws/visitor/{widget.button_guid}/?session={token}&since=0"
    frames: list[dict] = []

    async def scenario():
        socket = WebsocketCommunicator(application, url, headers=[(b"origin", b"http://testserver")])
        connected, _ = await socket.connect(timeout=3)
        assert connected
        frames.append(await socket.receive_json_from(timeout=3))  # the replay of the visitor's message
        reply = await database_sync_to_async(chat_services.post_agent_message)(
            widget=widget, chat=chat, agent=agent, data=chat_services.MessageInput(body="Hi")
        )
        frames.append(await socket.receive_json_from(timeout=3))
        await database_sync_to_async(chat_services.note_typing)(widget=widget, chat=chat, state="start", by="agent")
        frames.append(await socket.receive_json_from(timeout=3))
        await socket.send_json_to({"type": "seen", "message_id": reply.pk})
        frames.append(await socket.receive_json_from(timeout=3))
        await socket.send_json_to({"type": "ping"})
        frames.append(await socket.receive_json_from(timeout=3))
        await socket.send_json_to({"type": "dance"})
        frames.append(await socket.receive_json_from(timeout=3))
        await socket.disconnect()

    async_to_sync(scenario)()
    assert [f["event"] for f in frames] == ["message", "message", "typing", "seen", "pong", "error"]
    for frame in frames:
        check(frame)


@pytest.mark.django_db
def test_pushed_console_frames_match_the_document(widget, monkeypatch, django_capture_on_commit_callbacks):
    """The frames apps.chats.realtime pushes for a message and a close (the console's `chat`)."""
    from apps.chats import realtime

    pushed: list[dict] = []
    monkeypatch.setattr(realtime, "push", lambda groups, frame: pushed.append(frame))
    session, _ = visitor_services.start_session(widget=widget, name="Anna")
    with django_capture_on_commit_callbacks(execute=True):
        message = visitor_services.send_message(
            widget=widget, contact=session.contact, data=chat_services.MessageInput(body="Hello")
        )
        chat_services.close_chat(widget=widget, chat=message.chat, reason="done")
    assert {frame["event"] for frame in pushed} >= {"message", "chat"}
    for frame in pushed:
        check(frame)


@pytest.mark.django_db
def test_the_served_document_names_the_host_it_was_asked_on(client, settings):
    # given a deployment reached as chat.example.com over TLS, no PUBLIC_BASE_URL
    settings.ALLOWED_HOSTS = ["chat.example.com"]
    settings.PUBLIC_BASE_URL = ""
    response = client.get("/api/v1/asyncapi.yaml", HTTP_HOST="chat.example.com", secure=True)
    assert response.status_code == 200
    (server,) = yaml.safe_load(response.content)["servers"].values()
    assert (server["host"], server["protocol"]) == ("chat.example.com", "wss")

    # and plain HTTP on another port: ws on that host and port
    settings.ALLOWED_HOSTS = ["10.0.0.5"]
    (server,) = yaml.safe_load(client.get("/api/v1/asyncapi.yaml", HTTP_HOST="10.0.0.5:8080").content)[
        "servers"
    ].values()
    assert (server["host"], server["protocol"]) == ("10.0.0.5:8080", "ws")


@pytest.mark.django_db
def test_the_served_document_names_public_base_url_when_it_is_set(client, settings):
    settings.PUBLIC_BASE_URL = "https://chat.example.com"
    (server,) = yaml.safe_load(client.get("/api/v1/asyncapi.yaml").content)["servers"].values()
    assert (server["host"], server["protocol"]) == ("chat.example.com", "wss")
