"""Websocket groups and the one way to push a frame to them through the channel layer.

Groups: `chat.<id>` (the visitor's socket of that room) and `widget.<id>` (operator consoles). The
consumers join them; the apps' on-commit event handlers push to them. A push is best effort: a
visitor re-reads with `since` on reconnect, a console re-reads the lists.
"""

from __future__ import annotations

import logging

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

logger = logging.getLogger(__name__)


def chat_group(chat_id: int) -> str:
    return f"chat.{chat_id}"


def widget_group(widget_id: int) -> str:
    return f"widget.{widget_id}"


def push(groups: list[str], frame: dict) -> None:
    """Send `frame` to every group now (callers run after commit)."""
    layer = get_channel_layer()
    if layer is None:
        return
    for group in groups:
        try:
            async_to_sync(layer.group_send)(group, {"type": "push", "frame": frame})
        except Exception:  # a push is best effort: the visitor re-reads with `since` on reconnect
            logger.warning("websocket push failed", extra={"group": group})
