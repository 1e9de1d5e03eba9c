"""Fixtures of the support tests: a widget with the support API enabled for one token from
127.0.0.1 (the test client's address), a human support operator and a chat a customer wrote in."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import pytest
from rest_framework.test import APIClient

from apps.chats import services as chat_services
from apps.core import services as core_services
from apps.support.config import configure_support
from tests.support.factories import AgentFactory

SUPPORT_SCOPES = ["support:read", "support:reply", "support:write"]
_keys = itertools.count(1)


def base_config(**overrides) -> dict:
    config = {
        "enabled": True,
        "operator_agent_id": None,
        "allowed_tokens": [],
        "ip_allowlist": ["127.0.0.1/32", "::1/128"],
        "link_hosts": ["shop.ru", "магазин.рф"],
        "exact_links": ["https://docs.partner.com/guide?id=7"],
        "app_store_id": "id123456789",
        "play_package": "ru.shop.app",
        "ipv4_literals": ["203.0.113.10"],
        "messenger_handles": ["shop_bot"],
        "emails": ["help@shop.ru"],
        "channels": ["widget", "tg"],
    }
    config.update(overrides)
    return config


@dataclass
class Support:
    widget: object
    operator: object
    token: str
    prefix: str
    client: APIClient
    config: dict = field(default_factory=dict)

    def configure(self, **overrides):
        data = base_config(operator_agent_id=self.operator.pk, allowed_tokens=[self.prefix], **overrides)
        self.config = data
        return configure_support(widget=self.widget, data=data)

    def new_client(self, scopes=SUPPORT_SCOPES, allow=True) -> tuple[APIClient, str]:
        issued = core_services.issue_token(widget=self.widget, scopes=list(scopes))
        if allow:
            self.config["allowed_tokens"] = [*self.config["allowed_tokens"], issued.plaintext[:12]]
            configure_support(widget=self.widget, data=self.config)
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {issued.plaintext}")
        return client, issued.plaintext

    def chat(self, *, text="Hello, I need help", channel="widget", contact=None, email=""):
        contact = contact or chat_services.create_contact(widget=self.widget, name="Customer", email=email)
        message = chat_services.post_client_message(
            widget=self.widget,
            contact=contact,
            data=chat_services.MessageInput(body=text),
            channel=channel,
        )
        return message.chat

    def write(self, client, path, body, *, key=None, agent="agent-1", **extra):
        headers = {"HTTP_X_SERVICE_IDEMPOTENCY_KEY": key or f"k-{next(_keys)}"}
        if agent is not None:
            headers["HTTP_X_SERVICE_AGENT"] = agent
        return client.post(path, body, format="json", **headers, **extra)

    def post(self, path, body, **kw):
        return self.write(self.client, path, body, **kw)

    def reply(self, chat, text, *, client=None, **fields):
        chat.refresh_from_db()
        body = {"text": text, "expected_last_message_id": chat.last_message_id, **fields}
        return self.write(client or self.client, f"/api/v1/support/chats/{chat.pk}/reply", body)


@pytest.fixture
def support(db, widget):
    operator = AgentFactory(widget=widget, name="Support", type="human")
    issued = core_services.issue_token(widget=widget, scopes=SUPPORT_SCOPES)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {issued.plaintext}")
    s = Support(widget=widget, operator=operator, token=issued.plaintext, prefix=issued.plaintext[:12], client=client)
    s.configure()
    return s
