"""Typing preview: the visitor's `draft` on the visitor socket reaches the operator sockets
(/ws/agent/) while the widget's `typing_preview` is on, cut to 500 characters and at most two frames a
second per socket, and nowhere else: not in any table, log line or webhook delivery."""

import io
import json
import logging
import uuid

import pytest
from asgiref.sync import async_to_sync
from django.conf import settings
from django.core.management import call_command
from django.test import Client

from apps.agents.tests.factories import HumanAgentFactory
from apps.chats import services as chat_services
from apps.chats.visitor import consumers
from apps.chats.visitor import services as visitor_services
from apps.webhooks.models import Delivery
from apps.widget import services as widget_services
from config.asgi import application
from tests.support.websocket import WebsocketCommunicator

pytestmark = pytest.mark.django_db(transaction=True)

TIMEOUT = 3
ORIGIN = (b"origin", b"http://testserver")
DRAFT = "Secret-draft-7f3a9c: my card number is"


@pytest.fixture(autouse=True)
def memory_layer_and_cache(settings):
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    settings.CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": uuid.uuid4().hex}
    }


@pytest.fixture
def clock(monkeypatch):
    """The visitor socket's throttle clock, moved by hand."""

    class Clock:
        now = 1000.0

    monkeypatch.setattr(consumers, "DRAFT_CLOCK", lambda: Clock.now)
    return Clock


@pytest.fixture
def room(widget):
    """(contact, visitor session token, chat): a visitor who has written once."""
    session, token = visitor_services.start_session(widget=widget, name="Anna")
    message = visitor_services.send_message(
        widget=widget, contact=session.contact, data=chat_services.MessageInput(body="Hello")
    )
    return session.contact, token, message.chat


@pytest.fixture
def operator(widget):
    return HumanAgentFactory(widget=widget, name="Olga")


def preview(widget, on: bool) -> None:
    widget_services.update_settings(widget=widget, body={"typing_preview": on})


def run(scenario):
    async_to_sync(scenario)()


def agent_socket(user) -> WebsocketCommunicator:
    client = Client()
    client.force_login(user)
    cookie = f"{settings.SESSION_COOKIE_NAME}={client.cookies[settings.SESSION_COOKIE_NAME].value}".encode()
    return WebsocketCommunicator(application, "/ws/agent/", headers=[ORIGIN, (b"cookie", cookie)])


async def open_both(widget, token, user):
    from channels.db import database_sync_to_async

    console = await database_sync_to_async(agent_socket)(user)
    assert (await console.connect(timeout=TIMEOUT))[0]
    assert (await console.receive_json_from(timeout=TIMEOUT))["event"] == "ready"
    visitor = WebsocketCommunicator(application, f"/ws/visitor/{widget.button_guid}/?session={token}", headers=[ORIGIN])
    assert (await visitor.connect(timeout=TIMEOUT))[0]
    return console, visitor


async def drain(socket) -> list[dict]:
    frames = []
    while not await socket.receive_nothing(timeout=0.3):
        frames.append(await socket.receive_json_from(timeout=TIMEOUT))
    return frames


def drafts(frames) -> list[str]:
    return [f["draft"] for f in frames if f.get("event") == "typing" and "draft" in f]


def test_the_draft_reaches_the_operator_socket_cut_to_500_characters(widget, room, operator, clock):
    contact, token, chat = room
    preview(widget, True)

    async def scenario():
        console, visitor = await open_both(widget, token, operator.user)
        await visitor.send_json_to({"type": "typing", "state": "start", "draft": "x" * 700})
        frames = await drain(console)
        assert {"event": "typing", "chat_id": chat.pk, "state": "start", "by": "client", "draft": "x" * 500} in frames
        assert await visitor.receive_nothing(timeout=0.2)  # never echoed to the visitor
        await console.disconnect()
        await visitor.disconnect()

    run(scenario)


def test_at_most_two_drafts_a_second_are_passed_on_per_socket(widget, room, operator, clock):
    _, token, _ = room
    preview(widget, True)

    async def scenario():
        console, visitor = await open_both(widget, token, operator.user)
        for n in range(5):
            await visitor.send_json_to({"type": "typing", "state": "start", "draft": f"draft {n}"})
        assert drafts(await drain(console)) == ["draft 0", "draft 1"]
        clock.now += 0.999
        await visitor.send_json_to({"type": "typing", "state": "start", "draft": "still too soon"})
        assert drafts(await drain(console)) == []
        clock.now += 0.001
        await visitor.send_json_to({"type": "typing", "state": "start", "draft": "draft 5"})
        await visitor.send_json_to({"type": "typing", "state": "start", "draft": "draft 6"})
        await visitor.send_json_to({"type": "typing", "state": "start", "draft": "draft 7"})
        assert drafts(await drain(console)) == ["draft 5", "draft 6"]
        await console.disconnect()
        await visitor.disconnect()

    run(scenario)


def test_no_draft_is_passed_on_while_the_setting_is_off(widget, room, operator, clock):
    _, token, chat = room

    async def scenario():
        console, visitor = await open_both(widget, token, operator.user)
        await visitor.send_json_to({"type": "typing", "state": "start", "draft": DRAFT})
        frames = await drain(console)
        assert frames == [{"event": "typing", "chat_id": chat.pk, "state": "start", "by": "client"}]
        await console.disconnect()
        await visitor.disconnect()

    run(scenario)


def test_a_draft_that_is_not_text_is_refused(widget, room, operator, clock):
    _, token, _ = room
    preview(widget, True)

    async def scenario():
        visitor = WebsocketCommunicator(
            application, f"/ws/visitor/{widget.button_guid}/?session={token}", headers=[ORIGIN]
        )
        assert (await visitor.connect(timeout=TIMEOUT))[0]
        await visitor.send_json_to({"type": "typing", "state": "start", "draft": ["x"]})
        frame = await visitor.receive_json_from(timeout=TIMEOUT)
        assert frame["event"] == "error" and frame["code"] == "invalid_frame"
        await visitor.disconnect()

    run(scenario)


def test_a_draft_is_never_stored_logged_or_sent_to_webhooks(widget, room, operator, clock, caplog, api, settings):
    contact, token, chat = room
    preview(widget, True)
    settings.OUTBOUND_ALLOW_LOOPBACK = True  # a receiver on loopback that refuses: the delivery log keeps the rows
    subscribed = api(scopes=["webhooks:write"]).post(
        "/api/v1/webhook-subscriptions",
        {"url": "https://127.0.0.1:9/in", "events": ["message.created"]},
        format="json",
        HTTP_X_SERVICE_IDEMPOTENCY_KEY="preview-subscription",
    )
    assert subscribed.status_code == 201, subscribed.content
    caplog.set_level(logging.DEBUG)

    async def scenario():
        console, visitor = await open_both(widget, token, operator.user)
        await visitor.send_json_to({"type": "typing", "state": "start", "draft": DRAFT})
        assert drafts(await drain(console)) == [DRAFT]
        await visitor.send_json_to({"type": "typing", "state": "stop"})
        await drain(console)
        await console.disconnect()
        await visitor.disconnect()

    run(scenario)
    # The message the visitor then sends is delivered as usual: the webhook log is not empty.
    visitor_services.send_message(widget=widget, contact=contact, data=chat_services.MessageInput(body="Sent text"))
    deliveries = list(Delivery.objects.all())
    assert deliveries
    assert all("Secret-draft-7f3a9c" not in d.body + json.dumps(d.payload) for d in deliveries)
    dump = io.StringIO()
    call_command("dumpdata", stdout=dump)
    assert "Sent text" in dump.getvalue()
    assert "Secret-draft-7f3a9c" not in dump.getvalue()
    assert caplog.records
    assert all("Secret-draft-7f3a9c" not in record.getMessage() for record in caplog.records)
    assert all("Secret-draft-7f3a9c" not in json.dumps(record.__dict__, default=str) for record in caplog.records)
