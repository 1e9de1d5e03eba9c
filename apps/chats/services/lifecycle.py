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

    Reads the candidates in bounded batches and moves each chat in a transaction of its own, locked
    with `SKIP LOCKED` where the database has it and checked again under the lock, so two sweeps
    running at once never move one chat twice. One chat per transaction: a move adds to the
    statistics rollups, shared rows that one chat's change locks in a fixed order (apps.stats), so a
    transaction holding two chats' rows could wait in a cycle on one holding two others."""
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
        candidates = Chat.objects.filter(status__in=status_in, **window)
        while True:
            ids = list(candidates.order_by("last_message_at").values_list("pk", flat=True)[:batch_size])
            moved = 0
            for pk in ids:
                with transaction.atomic():
                    chat = (
                        candidates.filter(pk=pk)
                        .select_for_update(skip_locked=True, of=("self",))
                        .select_related("widget")
                        .first()
                    )
                    if chat is not None:
                        move(chat)
                        moved += 1
            counts[key] += moved
            # A full batch that another sweep took whole is that sweep's to finish.
            if len(ids) < batch_size or not moved:
                break
    return counts
