"""Reads of the console, composed from the chats and agents selectors; the agent's widget first."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import F, QuerySet

from apps.agents import selectors as agent_selectors
from apps.agents.models import Agent
from apps.ai.models import Assistant
from apps.canned import selectors as canned_selectors
from apps.canned.models import CannedResponse
from apps.chats import selectors as chat_selectors
from apps.chats.models import Chat, Message
from apps.platform.numbers import MAX_ID
from apps.widget import selectors as widget_selectors

LIST_SIZE = 50
HISTORY_PAGE = 100
REPLAY_MAX = 500


@dataclass(frozen=True)
class ChatFilters:
    status: str = ""
    assigned: str = ""  # "", "mine" or "unassigned"
    channel: str = ""
    q: str = ""


def list_chats(*, agent: Agent, filters: ChatFilters) -> list[Chat]:
    """The newest-active chats of the agent's widget (LIST_SIZE at most), every state unless
    filtered, with what a row shows joined (no query per row). A chat whose contact is under
    erasure is left out, as every read of chats leaves it out."""
    widget = agent.widget
    queryset = Chat.objects.filter(widget_id=widget.pk).live().select_related("contact", "agent", "last_message")
    if filters.assigned == "mine":
        queryset = queryset.filter(agent_id=agent.pk)
    elif filters.assigned == "unassigned":
        queryset = queryset.filter(agent__isnull=True)
    queryset = chat_selectors.filter_chats(
        queryset, widget=widget, status=filters.status or None, channel=filters.channel or None, q=filters.q or None
    )
    return list(queryset.order_by(F("last_message_at").desc(nulls_last=True), "-id")[:LIST_SIZE])


def get_chat(*, agent: Agent, chat_id: int) -> Chat | None:
    """A chat of the agent's widget (None for another widget's id, or one whose contact is under
    erasure, as for a missing one)."""
    if not 0 < chat_id <= MAX_ID:
        return None
    return (
        Chat.objects.filter(widget_id=agent.widget_id, pk=chat_id)
        .live()
        .select_related("contact", "agent", "handled_by")
        .first()
    )


def can_suggest(chat: Chat) -> bool:
    """Whether the composer offers "Suggest": the chat's widget has an enabled assistant (the one
    `apps.ai.assist.suggest_reply` would run, or none)."""
    return Assistant.objects.filter(widget_id=chat.widget_id, enabled=True).exists()


def _messages(chat: Chat) -> QuerySet[Message]:
    return chat_selectors.filter_messages(chat=chat).select_related("agent")


def latest_messages(chat: Chat) -> tuple[list[Message], bool]:
    """The last HISTORY_PAGE messages oldest first, and whether older ones exist."""
    rows = list(_messages(chat).order_by("-id")[: HISTORY_PAGE + 1])
    return list(reversed(rows[:HISTORY_PAGE])), len(rows) > HISTORY_PAGE


def messages_before(chat: Chat, before_id: int) -> tuple[list[Message], bool]:
    rows = list(_messages(chat).filter(pk__lt=before_id).order_by("-id")[: HISTORY_PAGE + 1])
    return list(reversed(rows[:HISTORY_PAGE])), len(rows) > HISTORY_PAGE


def messages_after(chat: Chat, after_id: int) -> list[Message]:
    """What arrived after the last message the console shows (live pushes and reconnect replay)."""
    return list(_messages(chat).filter(pk__gt=after_id).order_by("id")[:REPLAY_MAX])


def transfer_targets(*, agent: Agent) -> QuerySet[Agent]:
    """Human agents of the widget a chat can be handed to (not banned, not the agent itself)."""
    return (
        Agent.objects.filter(widget_id=agent.widget_id, type=Agent.Type.HUMAN)
        .exclude(status=Agent.Status.BANNED)
        .exclude(pk=agent.pk)
        .order_by("name", "pk")
    )


def online_agent_ids(*, agent: Agent) -> set[int]:
    return agent_selectors.online_agent_ids(agent.widget)


CANNED_PICKS = 20


def canned_picks(*, agent: Agent, q: str) -> list[CannedResponse]:
    """The composer's picker: the widget's canned responses matching `q` (as the API's `q`), by shortcut."""
    queryset = CannedResponse.objects.filter(widget_id=agent.widget_id)
    return list(canned_selectors.list_canned_responses(queryset, q=q or None).order_by("shortcut", "id")[:CANNED_PICKS])


def render_canned(*, agent: Agent, chat: Chat, canned_id: int) -> str | None:
    """A canned response of the agent's widget rendered for `chat` (the API's render), or None. An
    operator who may open the chat reads its contact (the chat's panel shows the name and e-mail)."""
    canned = CannedResponse.objects.filter(widget_id=agent.widget_id, pk=canned_id).first()
    if canned is None:
        return None
    return canned_selectors.render_for_chat(widget=agent.widget, canned=canned, chat=chat, contacts=True)


file_url = chat_selectors.file_url


def business_hours(*, agent: Agent):
    """The widget's business-hours state: the header says when the widget is closed to visitors
    (read from the row: one query per page, whatever the cache holds)."""
    return widget_selectors.business_hours_state(agent.widget, cached=False)
