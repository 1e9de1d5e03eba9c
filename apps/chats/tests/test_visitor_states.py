"""What the visitor's widget learns of its room's state: the `chat` frame when the room closes or a
machine hands it to people, the same frame once after the replay of a room that is closed or
waiting, and the config's `people_online` (whether a person could take a hand-over now)."""

import pytest
from asgiref.sync import async_to_sync
from django.utils import timezone

from apps.agents import selectors as agent_selectors
from apps.agents.models import Agent
from apps.chats import realtime
from apps.chats import services as chat_services
from apps.chats.models import Chat
from apps.chats.tests.factories import AgentFactory
from apps.chats.visitor import services as visitor_services
from apps.platform.realtime import chat_group, widget_group
from config.asgi import application
from tests.support.websocket import WebsocketCommunicator

ORIGIN = [(b"origin", b"http://testserver")]
TIMEOUT = 3


@pytest.fixture(autouse=True)
def memory_layer(settings):
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}


@pytest.fixture
def visitor(widget):
    session, token = visitor_services.start_session(widget=widget, name="Anna")
    return session.contact, token


def visitor_says(widget, contact, body="Hello"):
    return visitor_services.send_message(widget=widget, contact=contact, data=chat_services.MessageInput(body=body))


def connect_and_read(widget, token, since: int, *, expected: int) -> list[dict]:
    """The frames a socket opened with `since` receives: the first `expected` waited for (a loaded
    machine replays slowly: a short quiet is not the end of the replay), then any more that come
    before it goes quiet."""

    async def scenario():
        url = f"/ws/visitor/{widget.button_guid}/?session={token}&since={since}"
        socket = WebsocketCommunicator(application, url, headers=ORIGIN)
        connected, _ = await socket.connect(timeout=TIMEOUT)
        assert connected
        frames = [await socket.receive_json_from(timeout=TIMEOUT) for _ in range(expected)]
        while not await socket.receive_nothing(timeout=0.3):
            frames.append(await socket.receive_json_from(timeout=TIMEOUT))
        await socket.disconnect()
        return frames

    return async_to_sync(scenario)()


# --- on connect ----------------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_a_closed_room_says_so_after_the_replay(widget, visitor):
    contact, token = visitor
    message = visitor_says(widget, contact)
    chat_services.close_chat(widget=widget, chat=message.chat)

    frames = connect_and_read(widget, token, since=0, expected=2)

    assert [f["event"] for f in frames] == ["message", "chat"]
    assert frames[1] == {"event": "chat", "chat_id": message.chat_id, "status": "expired", "awaiting_human": False}


@pytest.mark.django_db(transaction=True)
def test_a_room_waiting_for_a_person_says_so_after_the_replay(widget, visitor):
    contact, token = visitor
    message = visitor_says(widget, contact)
    chat_services.await_human(widget=widget, chat=message.chat, reason="trigger")

    frames = connect_and_read(widget, token, since=message.pk, expected=1)

    assert frames == [{"event": "chat", "chat_id": message.chat_id, "status": "active", "awaiting_human": True}]


@pytest.mark.django_db(transaction=True)
def test_an_open_room_and_a_spam_room_send_no_state(widget, visitor):
    contact, token = visitor
    message = visitor_says(widget, contact)
    assert connect_and_read(widget, token, since=message.pk, expected=0) == []

    Chat.objects.filter(pk=message.chat_id).update(status=Chat.Status.SPAM, awaiting_human_since=timezone.now())
    assert connect_and_read(widget, token, since=message.pk, expected=0) == []  # a visitor is never told spam


@pytest.mark.django_db(transaction=True)
def test_writing_into_a_closed_room_reopens_it_and_the_next_connect_sends_no_state(widget, visitor):
    contact, token = visitor
    first = visitor_says(widget, contact)
    chat_services.close_chat(widget=widget, chat=first.chat)

    again = visitor_says(widget, contact, "One more thing")

    assert again.chat_id == first.chat_id
    assert connect_and_read(widget, token, since=again.pk, expected=0) == []


# --- live ----------------------------------------------------------------------------------------------


@pytest.fixture
def pushes(monkeypatch):
    sent: list[tuple[list[str], dict]] = []
    monkeypatch.setattr(realtime, "push", lambda groups, frame: sent.append((list(groups), frame)))
    return sent


@pytest.mark.django_db
def test_a_hand_over_tells_the_visitors_room_and_the_consoles_as_before(
    widget, visitor, pushes, django_capture_on_commit_callbacks
):
    contact, _ = visitor
    chat = visitor_says(widget, contact).chat
    pushes.clear()

    with django_capture_on_commit_callbacks(execute=True):
        chat_services.await_human(widget=widget, chat=chat, reason="trigger")

    assert pushes == [
        ([widget_group(widget.pk)], {"event": "chat", "chat_id": chat.pk, "status": "active"}),
        ([chat_group(chat.pk)], {"event": "chat", "chat_id": chat.pk, "status": "active", "awaiting_human": True}),
    ]


# --- config: people_online -------------------------------------------------------------------------------


def people_online(client, widget) -> bool:
    response = client.get(f"/api/visitor/v1/{widget.button_guid}/config")
    assert response.status_code == 200
    body = response.json()
    return body["people_online"]


@pytest.mark.django_db
def test_people_online_follows_a_persons_console(client, widget, monkeypatch):
    olga = AgentFactory(widget=widget)
    monkeypatch.setattr(agent_selectors, "PRESENCE_SOURCE", lambda widget: set())
    assert people_online(client, widget) is False

    monkeypatch.setattr(agent_selectors, "PRESENCE_SOURCE", lambda widget: {olga.pk})
    assert people_online(client, widget) is True


@pytest.mark.django_db
def test_a_machine_answering_is_online_but_not_people_online(client, widget, monkeypatch):
    robot = AgentFactory(widget=widget, type=Agent.Type.AI)
    monkeypatch.setattr(agent_selectors, "PRESENCE_SOURCE", lambda widget: {robot.pk})
    monkeypatch.setattr(visitor_services, "answerers", lambda widget: {"humans": [], "machines": {"ai": True}})

    response = client.get(f"/api/visitor/v1/{widget.button_guid}/config")

    assert (response.json()["online"], response.json()["people_online"]) == (True, False)


@pytest.mark.django_db
def test_people_online_is_false_while_closed_by_business_hours(client, widget, monkeypatch):
    from apps.chats.tests.test_visitor_hours import SATURDAY_NOON, set_hours
    from apps.widget import selectors as widget_selectors

    olga = AgentFactory(widget=widget)
    monkeypatch.setattr(agent_selectors, "PRESENCE_SOURCE", lambda widget: {olga.pk})
    set_hours(widget, "ai_only")  # Monday to Friday, 09:00 to 18:00 in Berlin
    real = widget_selectors.business_hours_state
    monkeypatch.setattr(
        widget_selectors, "business_hours_state", lambda widget, now=None, **kw: real(widget, now=SATURDAY_NOON, **kw)
    )

    assert people_online(client, widget) is False
