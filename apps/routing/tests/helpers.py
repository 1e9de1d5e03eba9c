"""What the routing tests share: a widget with routing on, operators marked online, visitors writing."""

from __future__ import annotations

from apps.agents import selectors as agent_selectors
from apps.chats import services as chat_services
from apps.chats.models import Chat
from apps.routing.models import ChatRouting, RoutingSettings
from tests.support.factories import AgentFactory


class Presence:
    """Who is online in the console, as `apps.agents.selectors.PRESENCE_SOURCE` answers."""

    def __init__(self) -> None:
        self.online: set[int] = set()

    def __call__(self, widget) -> set[int]:
        return set(self.online)


def presence(monkeypatch) -> Presence:
    source = Presence()
    monkeypatch.setattr(agent_selectors, "PRESENCE_SOURCE", source)
    return source


def routing_on(widget, *, mode: str = "round_robin", capacity: int = 3, reroute: int | None = None) -> RoutingSettings:
    row, _ = RoutingSettings.objects.update_or_create(
        widget=widget,
        defaults={"mode": mode, "default_capacity": capacity, "reroute_after_seconds": reroute},
    )
    return row


def operators(widget, count: int, online: Presence | None = None, **kwargs) -> list:
    rows = [AgentFactory(widget=widget, **kwargs) for _ in range(count)]
    if online is not None:
        online.online |= {a.pk for a in rows}
    return rows


def visitor_writes(widget, text: str = "Hello", *, channel: str = "widget") -> Chat:
    """A new visitor's first message: the chat is created (and, routing on, queued)."""
    contact = chat_services.create_contact(widget=widget, name="Visitor")
    message = chat_services.post_client_message(
        widget=widget, contact=contact, data=chat_services.MessageInput(body=text), channel=channel
    )
    return Chat.objects.get(pk=message.chat_id)


def queued_ids(widget) -> list[int]:
    return list(
        ChatRouting.objects.filter(widget=widget, queue_since__isnull=False)
        .order_by("queue_since", "chat_id")
        .values_list("chat_id", flat=True)
    )


def open_loads(widget) -> dict[int, int]:
    loads: dict[int, int] = {}
    for agent_id in Chat.objects.filter(widget=widget, status=Chat.Status.ACTIVE, agent__isnull=False).values_list(
        "agent_id", flat=True
    ):
        loads[agent_id] = loads.get(agent_id, 0) + 1
    return loads
