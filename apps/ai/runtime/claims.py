"""The reply claim of a message (a unique insert: two workers, or a redelivered task, answer once),
and the claims a process holds, given back when its worker stops."""

from __future__ import annotations

import logging
import secrets
import threading
from datetime import timedelta

from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from apps.chats.models import Chat, Message
from apps.core.models import Widget

from ..models import ReplyClaim
from . import limits

logger = logging.getLogger(__name__)


_held_lock = threading.Lock()
_held: dict[int, str] = {}  # claim id -> token, while this process's task works on it


def _hold(claim: ReplyClaim) -> None:
    with _held_lock:
        _held[claim.pk] = claim.token


def _let_go(claim: ReplyClaim) -> None:
    with _held_lock:
        _held.pop(claim.pk, None)


def release_claims() -> int:
    """Give back the claims this process's tasks hold (its worker is stopping): each still `working`
    under its token is put past its lease, so the beat job `redrive` sends its task again at once and
    the next worker takes it over. A task that still finishes here posts only while nobody took the
    claim over (the token), so the message is answered once. Returns how many were given back."""
    with _held_lock:
        held = dict(_held)
    if not held:
        return 0
    expired = timezone.now() - limits.CLAIM_LEASE - timedelta(seconds=1)
    released = 0
    for pk, token in held.items():
        released += ReplyClaim.objects.filter(pk=pk, token=token, state=ReplyClaim.State.WORKING).update(
            claimed_at=expired
        )
    if released:
        logger.info("AI reply claims given back by a stopping worker: %s", released)
    return released


def _claim(*, widget: Widget, chat: Chat, message: Message) -> ReplyClaim | None:
    token = secrets.token_hex(16)
    try:
        if transaction.get_autocommit():
            # One statement: autocommit makes it atomic, and a unique violation leaves no broken
            # transaction behind (saves the BEGIN/COMMIT round trips of an atomic block).
            return ReplyClaim.objects.create(widget=widget, chat=chat, message=message, token=token)
        with transaction.atomic():
            return ReplyClaim.objects.create(widget=widget, chat=chat, message=message, token=token)
    except IntegrityError:
        pass
    now = timezone.now()
    taken = ReplyClaim.objects.filter(
        message=message, state=ReplyClaim.State.WORKING, claimed_at__lt=now - limits.CLAIM_LEASE
    ).update(token=token, claimed_at=now, attempts=F("attempts") + 1)
    return ReplyClaim.objects.get(message=message) if taken else None
