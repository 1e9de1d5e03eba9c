"""What the runtime reads: newer visitor messages, the AI operator answering for an assistant, and
the history the visitor saw."""

from __future__ import annotations

from apps.agents.models import Agent
from apps.chats.models import Message
from apps.core.models import Widget

from .. import selectors
from ..models import Assistant
from . import limits


def newer_visitor_message_exists(message: Message) -> bool:
    return selectors.newer_visitor_messages(message.chat_id, message.widget_id, message.pk).exists()


def active_operator(widget: Widget, assistant: Assistant) -> Agent | None:
    """The AI operator that answers for `assistant`: its oldest active one."""
    return selectors.operators_of(widget, assistant).filter(status=Agent.Status.ACTIVE).order_by("id").first()


def _content(message: Message) -> str:
    if message.type == Message.Type.TEXT or message.body:
        return message.body
    return f"[{message.type}]"


def visible_history(message: Message) -> list[dict]:
    """The messages the visitor saw before `message`: see chat_history."""
    return chat_history(chat_id=message.chat_id, widget_id=message.widget_id, before_id=message.pk)


def chat_history(*, chat_id: int, widget_id: int, before_id: int | None = None) -> list[dict]:
    """The messages the visitor saw (before message `before_id` when given): the newest
    HISTORY_MESSAGES, at most HISTORY_CHARACTERS in all, oldest first, as {role, content}. What the AI
    answers, suggests and summarises from."""
    rows = Message.objects.filter(
        chat_id=chat_id,
        widget_id=widget_id,
        visibility=Message.Visibility.PUBLIC,
        author_kind__in=[Message.Author.CLIENT, Message.Author.AGENT, Message.Author.AI],
    )
    if before_id is not None:
        rows = rows.filter(id__lt=before_id)
    history, total = [], 0
    for row in rows.order_by("-created_at", "-id").only("type", "body", "author_kind")[: limits.HISTORY_MESSAGES]:
        content = _content(row)
        if not content.strip():
            continue
        total += len(content)
        if total > limits.HISTORY_CHARACTERS:
            break
        history.append(
            {"role": "user" if row.author_kind == Message.Author.CLIENT else "assistant", "content": content}
        )
    history.reverse()
    return history
