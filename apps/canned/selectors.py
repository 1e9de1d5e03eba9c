"""Reads of canned responses: the searchable list and the rendering for one chat."""

from __future__ import annotations

from django.db.models import Q, QuerySet

from apps.agents.models import Agent
from apps.chats.models import Chat
from apps.core.models import Widget
from apps.widget import selectors as widget_selectors

from . import variables
from .models import CannedResponse


def list_canned_responses(
    queryset: QuerySet[CannedResponse], *, q: str | None = None, language: str | None = None
) -> QuerySet[CannedResponse]:
    """`queryset` (the widget's rows) narrowed by `q` (a substring of shortcut, title or text, any
    case) and `language` (rows of that language and rows for any language). A `q` holding NUL
    finds nothing: no row stores it, and PostgreSQL refuses it in a query."""
    if q and "\x00" in q:
        return queryset.none()
    if q:
        queryset = queryset.filter(Q(shortcut__icontains=q) | Q(title__icontains=q) | Q(text__icontains=q))
    if language:
        queryset = queryset.filter(Q(language=language) | Q(language__isnull=True))
    return queryset


def get_chat(*, widget: Widget, chat_id: int | None) -> Chat | None:
    """The widget's chat with its contact and assigned agent, or None (missing, foreign and a chat
    whose contact is under erasure alike)."""
    if chat_id is None:
        return None
    return Chat.objects.select_related("contact", "agent").filter(widget=widget, pk=chat_id).live().first()


def variable_values(*, widget: Widget, chat: Chat, contacts: bool) -> dict[str, str | None]:
    """The values of `chat`'s variables. Without `contacts` (the reader may not read contacts) the
    contact's variables have no value, so they render as a missing one does: fallback, else empty."""
    agent = chat.agent if chat.agent is not None and chat.agent.type == Agent.Type.HUMAN else None
    return {
        "contact.name": chat.contact.name if contacts else None,
        "contact.email": chat.contact.email if contacts else None,
        "agent.name": agent.name if agent is not None else None,
        "widget.name": widget_selectors.effective_settings(widget)["widget_name"],
    }


def render_for_chat(*, widget: Widget, canned: CannedResponse, chat: Chat, contacts: bool) -> str:
    """The text of `canned` with its variables filled in for `chat` (same widget): the contact's
    name and e-mail (only when `contacts`: the reader may read contacts), the chat's assigned human
    agent, the `widget_name` setting."""
    assert canned.widget_id == widget.pk and chat.widget_id == widget.pk
    return variables.render(canned.text, variable_values(widget=widget, chat=chat, contacts=contacts))


def render_text_for_chat(*, widget: Widget, chat: Chat, text: str, agent: Agent | None = None) -> str:
    """`text` (checked like a canned response's) with its variables filled in for `chat`, as a
    macro's message sends it to the chat's own visitor: the contact's values, `agent.name` of
    `agent` (the operator sending it) when a human, else of the chat's assigned human agent."""
    assert chat.widget_id == widget.pk
    values = variable_values(widget=widget, chat=chat, contacts=True)
    if agent is not None and agent.type == Agent.Type.HUMAN:
        values["agent.name"] = agent.name
    return variables.render(text, values)
