"""The one way an operator is told they were mentioned: a frame to their open consoles (the console
shows it as a toast, a browser notification when allowed, and the count of the "Mentions" item),
and a push to their devices that chose mentions (apps.push.notify)."""

from __future__ import annotations

from apps.platform.realtime import agent_group, push
from apps.push import notify as web_push

from . import selectors
from .models import Mention

EXCERPT_CHARS = 200


def excerpt(text: str) -> str:
    """The start of a note, as the API, the frame and the console show it."""
    text = " ".join(text.split())
    return text if len(text) <= EXCERPT_CHARS else text[: EXCERPT_CHARS - 1] + "…"


def mention_frame(mention: Mention, *, unread: int) -> dict:
    by = mention.by_agent
    return {
        "event": "mention",
        "mention_id": mention.pk,
        "chat_id": mention.chat_id,
        "message_id": mention.message_id,
        "by_agent_id": mention.by_agent_id,
        "by_name": f"{by.name} {by.surname}".strip() if by is not None else "",
        "text": excerpt(mention.message.body),
        "unread": unread,
    }


def notify_mention(mention: Mention) -> None:
    """Tell the mentioned operator, after the note committed. `unread` is their count of unread
    mentions now (the console's badge)."""
    unread = selectors.count_unread(widget=mention.widget, agent_id=mention.agent_id)
    push([agent_group(mention.agent_id)], mention_frame(mention, unread=unread))
    web_push.notify(mention.agent_id, "mention", mention.chat, text=mention.message.body)
