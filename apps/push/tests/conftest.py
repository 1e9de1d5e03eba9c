from __future__ import annotations

import pytest

from apps.agents.tests.factories import HumanAgentFactory
from apps.chats.tests.factories import ChatFactory, ContactFactory
from apps.push import send, services
from apps.push.management.commands.generate_vapid_keys import new_pair
from apps.webhooks.tests.receiver import Receiver

from .push_service import Device, push_service


@pytest.fixture
def vapid(settings):
    private, public = new_pair()
    settings.VAPID_PRIVATE_KEY, settings.VAPID_PUBLIC_KEY = private, public
    settings.VAPID_SUBJECT = "mailto:ops@example.com"
    return public


class PushService:
    """The loopback push service with its checks (`problems`) and a way to change its answers."""

    def __init__(self, receiver: Receiver, problems: list[str]) -> None:
        self.rx = receiver
        self.problems = problems
        self.answers: dict[str, object] = {}  # path -> Reply or status

    def endpoint(self, name: str) -> str:
        return self.rx.url(f"/push/{name}")

    def answer(self, hit):
        return self.answers.get(hit.path)

    def hits(self, name: str):
        return [hit for hit in self.rx.hits if hit.path == f"/push/{name}"]


@pytest.fixture
def push_svc(vapid, settings, monkeypatch):
    settings.OUTBOUND_ALLOW_LOOPBACK = True
    problems: list[str] = []
    holder: dict = {}
    rule = push_service(
        origin_of=lambda: holder["rx"].url("").rstrip("/"),
        public_key=vapid,
        problems=problems,
        answer=lambda hit: holder["svc"].answer(hit),
    )
    with Receiver(rule=rule) as rx:
        holder["rx"] = rx
        holder["svc"] = svc = PushService(rx, problems)
        monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(rx.ca_path))
        send.close_session()
        yield svc
        send.close_session()


@pytest.fixture
def chat(widget):
    return ChatFactory(contact=ContactFactory(widget=widget, name="Vera"))


@pytest.fixture
def olga(widget):
    return HumanAgentFactory(widget=widget, name="Olga")


def add_device(agent, svc: PushService, name: str, **choices) -> tuple[Device, object]:
    device = Device()
    row = services.subscribe_device(agent=agent, data=device.subscription(svc.endpoint(name)), user_agent="Firefox")
    if choices:
        services.set_choices(subscription=row, choices=choices)
    return device, row
