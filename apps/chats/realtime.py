"""Live pushes to websockets through the channel layer, sent after the transaction commits.

Groups: `chat.<id>` (the visitor's socket of that room) and `widget.<id>` (operator consoles).
Frames carry only what the receiving side may see; the visitor group never receives private
notes, operator-only e-mails or operator-to-operator messages.
"""

from __future__ import annotations

import logging

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction

logger = logging.getLogger(__name__)


def chat_group(chat_id: int) -> str:
    return f"chat.{chat_id}"


def widget_group(widget_id: int) -> str:
    return f"widget.{widget_id}"


def _send(groups: list[str], frame: dict) -> None:
    layer = get_channel_layer()
    if layer is None:
        return
    for group in groups:
        try:
            async_to_sync(layer.group_send)(group, {"type": "push", "frame": frame})
        except Exception:  # a push is best effort: the visitor re-reads with `since` on reconnect
            logger.warning("websocket push failed", extra={"group": group})


def _on_commit(groups: list[str], frame: dict) -> None:
    transaction.on_commit(lambda: _send(groups, frame))


def message_created(message) -> None:
    from .serializers import visitor_message_frame

    groups = [widget_group(message.widget_id)]
    if message.visibility == "public":
        groups.append(chat_group(message.chat_id))
    _on_commit(groups, {"event": "message", "chat_id": message.chat_id, "message": visitor_message_frame(message)})


def chat_changed(chat) -> None:
    _on_commit([widget_group(chat.widget_id)], {"event": "chat", "chat_id": chat.pk, "status": chat.status})


def typing(chat, *, state: str, by: str) -> None:
    groups = [widget_group(chat.widget_id)] if by == "client" else [chat_group(chat.pk), widget_group(chat.widget_id)]
    _send(groups, {"event": "typing", "chat_id": chat.pk, "state": state, "by": by})


def seen(chat, *, message_id: int, by: str) -> None:
    _on_commit(
        [chat_group(chat.pk), widget_group(chat.widget_id)],
        {"event": "seen", "chat_id": chat.pk, "message_id": message_id, "by": by},
    )
