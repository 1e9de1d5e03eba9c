"""A visitor message gets its worker task: the on-commit handler of message.created, and the send."""

from __future__ import annotations

import logging

from apps.chats.models import Message
from apps.core import events, queueing

from . import limits

logger = logging.getLogger(__name__)


def message_created(event: events.Event) -> None:
    """On-commit handler of message.created: a visitor's message gets its worker task."""
    message = event.obj("message")
    if message is None or message.author_kind != Message.Author.CLIENT:
        return
    enqueue(message.pk)


def enqueue(message_id: int, *, countdown: float | None = None) -> bool:
    """Send the message's task; False when the broker refused it (the beat job `redrive` sends it
    again later: the message is committed, so its answer is only late, never lost)."""
    options: dict = {}
    if limits.QUEUE:
        options["queue"] = limits.QUEUE
    if countdown:
        options["countdown"] = countdown
    try:
        queueing.task("apps.ai.tasks.answer_visitor_message").apply_async((message_id,), **options)
    except Exception:  # noqa: BLE001 - broker down: `redrive` sends it again
        logger.warning("AI reply task could not be enqueued", extra={"message_id": message_id}, exc_info=True)
        return False
    return True
