"""Helpers building external operators and the chats they answer."""

from __future__ import annotations

from apps.chats.models import Message
from apps.chats.tests.factories import ChatFactory, ContactFactory, MessageFactory
from apps.core.models import Widget
from apps.external import services
from apps.external.models import ExternalOperator

SECRET = "whsec_dGVzdC1zZWNyZXQtb2YtdGhlLWV4dGVybmFsLW9wZXJhdG9y"


def make_operator(
    widget: Widget, url: str = "https://127.0.0.1:1/hook", *, name: str = "Bot", state: str = "active", secret=SECRET
) -> ExternalOperator:
    """An operator; `url` must pass the address policy (loopback with OUTBOUND_ALLOW_LOOPBACK)."""
    operator, _ = services.create_external_operator(widget=widget, name=name, url=url, secret=secret, state=state)
    return operator


def visitor_message(widget: Widget, text: str = "Hello, is anyone there?", chat=None) -> Message:
    chat = chat or ChatFactory(contact=ContactFactory(widget=widget))
    return MessageFactory(chat=chat, body=text, author_kind=Message.Author.CLIENT)
