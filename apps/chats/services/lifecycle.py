"""The scheduled idle sweep: quiet rooms close, talked-in ones become active again."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db import transaction
from django.utils import timezone

from ..models import Chat
from .state import _expire, _move_status

IDLE_EXPIRY = timedelta(minutes=7)


def sweep_idle_chats(*, now: datetime | None = None, batch_size: int = 500) -> dict[str, int]:
    """The scheduled job (every 5 minutes): non-spam chats with messages whose last message is 7
    minutes old or more move to expired (chat.closed on every move, the same effects as a close);
    younger ones that are `ready` or `expired` become active again (chat.status_changed, so closing
    a chat just talked in reads back as active). Spam chats and chats without messages are left alone.

    Works in bounded batches, each its own transaction with `SKIP LOCKED` where the database has
    it, so two sweeps running at once never move one chat twice."""
    now = now or timezone.now()
    cutoff = now - IDLE_EXPIRY
    counts = {"expired": 0, "activated": 0}
    for key, status_in, window, move in (
        (
            "expired",
            [Chat.Status.ACTIVE, Chat.Status.READY],
            {"last_message_at__isnull": False, "last_message_at__lte": cutoff},
            lambda chat: _expire(chat, reason="expired", now=now),
        ),
        (
            "activated",
            [Chat.Status.READY, Chat.Status.EXPIRED],
            {"last_message_at__gt": cutoff},
            lambda chat: _move_status(chat, status=Chat.Status.ACTIVE, now=now, reopen=True),
        ),
    ):
        while True:
            with transaction.atomic():
                batch = list(
                    Chat.objects.select_for_update(skip_locked=True, of=("self",))
                    .select_related("widget")
                    .filter(status__in=status_in, **window)
                    .order_by("last_message_at")[:batch_size]
                )
                for chat in batch:
                    move(chat)
            counts[key] += len(batch)
            if len(batch) < batch_size:
                break
    return counts
