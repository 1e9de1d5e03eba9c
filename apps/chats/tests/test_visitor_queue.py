"""The visitor's place in line: GET /api/visitor/v1/{button_guid}/queue, the config's
`show_queue_position`, and the socket's `queue` frame (product-decisions.md "Queue position")."""

from datetime import timedelta

import jsonschema
import pytest
from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async
from django.utils import timezone

from apps.chats import asyncapi
from apps.chats import services as chat_services
from apps.chats.tests.factories import AgentFactory, ChatFactory
from apps.chats.visitor import services as visitor_services
from apps.core import ports
from apps.routing import services as routing_services
from apps.routing.models import ChatRouting, RoutingSettings
from config.asgi import application
from tests.support.plugin import assert_problem
from tests.support.websocket import WebsocketCommunicator

BASE = "/api/visitor/v1"
ROUTING = {"mode": "round_robin", "default_capacity": 3, "reroute_after_seconds": None, "show_queue_position": True}


def get(client, widget, route: str, token: str | None = None):
    extra = {"HTTP_AUTHORIZATION": f"Visitor {token}"} if token is not None else {}
    return client.get(f"{BASE}/{widget.button_guid}/{route}", **extra)


def routing_on(widget, **changes) -> None:
    routing_services.put_settings(widget=widget, data={**ROUTING, **changes})


def visitor(widget, name: str, *, says: str | None = "Hello"):
    """(contact, token) of a new session; with `says`, its first message (routing queues the chat)."""
    session, token = visitor_services.start_session(widget=widget, name=name)
    if says is not None:
        visitor_services.send_message(
            widget=widget, contact=session.contact, data=chat_services.MessageInput(body=says)
        )
    return session.contact, token


def waited(widget, seconds: float, count: int = 5) -> None:
    at = timezone.now() - timedelta(hours=1)
    for n in range(count):
        ChatRouting.objects.create(
            chat=ChatFactory(contact__widget=widget),
            widget=widget,
            queued_at=at,
            assigned_at=at + timedelta(seconds=n),
            wait_seconds=seconds,
            assigned_by="routing",
        )


# --- GET queue --------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_each_visitor_reads_their_own_place_in_line(client, widget):
    routing_on(widget)
    tokens = [visitor(widget, name)[1] for name in ("Anna", "Boris", "Clara")]
    answers = [get(client, widget, "queue", token) for token in tokens]
    assert all(a.status_code == 200 for a in answers)
    assert [a.json() for a in answers] == [
        {"position": 1, "estimated_wait_seconds": None},
        {"position": 2, "estimated_wait_seconds": None},
        {"position": 3, "estimated_wait_seconds": None},
    ]
    assert answers[0]["Cache-Control"] == "no-store"


@pytest.mark.django_db
def test_the_estimate_is_the_position_times_the_median_wait(client, widget):
    routing_on(widget)
    waited(widget, 45.0)
    visitor(widget, "Anna")
    _, token = visitor(widget, "Boris")
    assert get(client, widget, "queue", token).json() == {"position": 2, "estimated_wait_seconds": 90}


@pytest.mark.django_db
def test_both_null_before_the_first_message(client, widget):
    routing_on(widget)
    _, token = visitor(widget, "Anna", says=None)
    assert get(client, widget, "queue", token).json() == {"position": None, "estimated_wait_seconds": None}


@pytest.mark.django_db
def test_both_null_when_the_chat_does_not_wait(client, widget):
    # routing off (manual): nobody queues
    _, token = visitor(widget, "Anna")
    assert get(client, widget, "queue", token).json() == {"position": None, "estimated_wait_seconds": None}


@pytest.mark.django_db
def test_both_null_once_an_operator_has_the_chat(client, widget, django_capture_on_commit_callbacks):
    routing_on(widget)
    contact, token = visitor(widget, "Anna")
    chat = visitor_services.get_room(widget=widget, contact=contact)
    agent = AgentFactory(widget=widget)
    chat_services.set_routing_owner(widget=widget, chat=chat, agent=agent, by="api")
    assert get(client, widget, "queue", token).json() == {"position": None, "estimated_wait_seconds": None}


@pytest.mark.django_db
def test_both_null_while_the_widget_hides_the_position(client, widget):
    routing_on(widget, show_queue_position=False)
    _, token = visitor(widget, "Anna")
    assert ChatRouting.objects.filter(widget=widget, queue_since__isnull=False).count() == 1  # it waits
    assert get(client, widget, "queue", token).json() == {"position": None, "estimated_wait_seconds": None}


@pytest.mark.django_db
def test_another_widgets_session_is_refused_and_reads_nothing(client, widget, other_widget):
    routing_on(widget)
    routing_on(other_widget)
    visitor(widget, "Anna")
    _, foreign = visitor(other_widget, "Boris")
    assert_problem(get(client, widget, "queue", foreign), 401)
    assert_problem(get(client, widget, "queue"), 401)
    # Boris, on his own widget, is first in his own line: Anna's queue is not his
    assert get(client, other_widget, "queue", foreign).json()["position"] == 1


@pytest.mark.django_db
def test_without_routing_nobody_is_queued(client, widget, provide_port):
    routing_on(widget)
    _, token = visitor(widget, "Anna")
    provide_port(ports.VISITOR_QUEUE, None)
    assert get(client, widget, "queue", token).json() == {"position": None, "estimated_wait_seconds": None}


# --- the config -----------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_config_says_whether_the_widget_shows_the_position(client, widget, django_capture_on_commit_callbacks):
    assert get(client, widget, "config").json()["show_queue_position"] is True  # the default
    with django_capture_on_commit_callbacks(execute=True):
        routing_on(widget, show_queue_position=False)  # purges the cached config
    assert get(client, widget, "config").json()["show_queue_position"] is False
    with django_capture_on_commit_callbacks(execute=True):
        routing_on(widget, show_queue_position=True)
    assert get(client, widget, "config").json()["show_queue_position"] is True


@pytest.mark.django_db
def test_without_routing_the_config_shows_no_position(client, widget, provide_port):
    provide_port(ports.VISITOR_QUEUE, None)
    assert get(client, widget, "config").json()["show_queue_position"] is False


# --- the socket's frame -----------------------------------------------------------------------------------


@pytest.fixture
def memory_layer(settings):
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}


def documented(frame: dict) -> None:
    schema = asyncapi.SERVER_FRAMES["queueFrame"]["payload"]
    jsonschema.validate(frame, schema, cls=jsonschema.Draft202012Validator)


@pytest.mark.django_db(transaction=True)
def test_the_visitor_socket_hears_its_place_move_up_then_end(widget, memory_layer):
    routing_on(widget)
    first, _ = visitor(widget, "Anna")
    second, token = visitor(widget, "Boris")
    ahead = visitor_services.get_room(widget=widget, contact=first)
    mine = visitor_services.get_room(widget=widget, contact=second)
    agent = AgentFactory(widget=widget)
    frames: list[dict] = []

    async def scenario():
        socket = WebsocketCommunicator(
            application,
            f"/ws/visitor/{widget.button_guid}/?session={token}",
            headers=[(b"origin", b"http://testserver")],
        )
        assert (await socket.connect(timeout=3))[0]
        await database_sync_to_async(chat_services.set_routing_owner)(widget=widget, chat=ahead, agent=agent, by="api")
        frames.append(await socket.receive_json_from(timeout=3))
        await database_sync_to_async(chat_services.set_routing_owner)(widget=widget, chat=mine, agent=agent, by="api")
        frames.append(await socket.receive_json_from(timeout=3))
        assert await socket.receive_nothing(timeout=0.2)
        await socket.disconnect()

    async_to_sync(scenario)()
    assert frames == [
        {"event": "queue", "type": "queue", "chat_id": mine.pk, "position": 1, "estimated_wait_seconds": None},
        {"event": "queue", "type": "queue", "chat_id": mine.pk, "position": None, "estimated_wait_seconds": None},
    ]
    for frame in frames:
        documented(frame)


@pytest.mark.django_db
def test_only_the_moved_visitors_rooms_hear(widget, monkeypatch, django_capture_on_commit_callbacks):
    from apps.chats import realtime

    sent: list[tuple[list[str], dict]] = []
    monkeypatch.setattr(realtime, "push_each", lambda pushes: sent.extend(pushes))
    with django_capture_on_commit_callbacks(execute=True):
        routing_on(widget)
    rooms = []
    for name in ("Anna", "Boris", "Clara"):
        with django_capture_on_commit_callbacks(execute=True):
            contact, _ = visitor(widget, name)
        rooms.append(visitor_services.get_room(widget=widget, contact=contact))
    # each newcomer heard only its own place
    assert [(groups, f["position"]) for groups, f in sent] == [
        ([f"chat.{rooms[0].pk}"], 1),
        ([f"chat.{rooms[1].pk}"], 2),
        ([f"chat.{rooms[2].pk}"], 3),
    ]
    sent.clear()
    with django_capture_on_commit_callbacks(execute=True):
        chat_services.set_routing_owner(widget=widget, chat=rooms[1], agent=AgentFactory(widget=widget), by="api")
    assert sorted((groups[0], f["position"]) for groups, f in sent) == sorted(
        [(f"chat.{rooms[1].pk}", None), (f"chat.{rooms[2].pk}", 2)]
    )
    assert RoutingSettings.objects.get(widget=widget).show_queue_position
