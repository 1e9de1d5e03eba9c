"""The beat job that sends again the task of a visitor message whose task was lost."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.db.models import Exists, F, OuterRef, Q
from django.utils import timezone

from apps.chats.models import Chat, Message

from .. import selectors
from ..models import AiSettings, ReplyClaim
from . import enqueueing, limits, turns

logger = logging.getLogger(__name__)


# A visitor message older than this, with no live claim (none, or a `working` one past its lease) and
# no newer visitor message, in a chat the AI would answer, lost its task (the broker refused it, a
# worker died or stopped holding its claim): the beat job sends it again.
REDRIVE_AFTER = timedelta(seconds=30)
# ... unless it is older than this (an answer that late is not an answer any more).
REDRIVE_WINDOW = limits.LONGEST_WAIT
REDRIVE_LIMIT = 500
_REDRIVE_KEY = "ai:redrive:{}"


def lost_messages(*, now: datetime | None = None, limit: int = REDRIVE_LIMIT) -> list[int]:
    """Ids of visitor messages in [now - REDRIVE_WINDOW, now - REDRIVE_AFTER] of widgets with AI on,
    in chats no person holds and that do not wait for one, with no newer visitor message and no live
    ReplyClaim: their answer task never ran to a claim, or the worker holding the claim died (the
    claim is `working` past CLAIM_LEASE) or gave it back when it stopped. Oldest first. One query
    (the message index `widget, -created_at` per AI widget)."""
    now = now or timezone.now()
    live_claims = ReplyClaim.objects.filter(message_id=OuterRef("pk")).exclude(
        state=ReplyClaim.State.WORKING, claimed_at__lt=now - limits.CLAIM_LEASE
    )
    widget_ids = list(AiSettings.objects.filter(enabled=True).values_list("widget_id", flat=True))
    if not widget_ids:
        return []
    # A message written before its widget's AI went on is the people's to answer.
    since_switched_on = Q(widget__ai_settings__enabled_at__isnull=True) | Q(
        created_at__gte=F("widget__ai_settings__enabled_at")
    )
    rows = (
        Message.objects.filter(
            since_switched_on,
            widget_id__in=widget_ids,
            author_kind=Message.Author.CLIENT,
            created_at__gte=now - REDRIVE_WINDOW,
            created_at__lte=now - REDRIVE_AFTER,
            chat__awaiting_human_since__isnull=True,
        )
        .exclude(chat__status__in=[Chat.Status.SPAM, Chat.Status.EXPIRED])
        .exclude(chat__handled_by_type=Chat.OperatorType.HUMAN)
        .annotate(
            claimed=Exists(live_claims),
            newer_exists=Exists(
                selectors.newer_visitor_messages(OuterRef("chat_id"), OuterRef("widget_id"), OuterRef("pk"))
            ),
        )
        .filter(claimed=False, newer_exists=False)
        .order_by("created_at", "id")
        .values_list("pk", flat=True)
    )
    return list(rows[:limit])


def redrive(*, now: datetime | None = None) -> int:
    """The beat job: send the task of every lost visitor message once per claim attempt (a cache
    mark per message and attempt for the window: a lost task once, then once more each time a
    worker holding its claim died or stopped; a send the broker refuses again clears its mark, so
    the next run retries). A task sent twice answers once all the same (the claim). Returns how many
    were sent."""
    from django.core.cache import cache

    sent = 0
    lost = lost_messages(now=now)
    # A task waiting for one of its widget's slots is on its way back (`turns`), not lost.
    waiting = turns.waiting(lost)
    lost = [pk for pk in lost if pk not in waiting]
    attempts = dict(ReplyClaim.objects.filter(message_id__in=lost).values_list("message_id", "attempts"))
    for message_id in lost:
        key = _REDRIVE_KEY.format(f"{message_id}:{attempts.get(message_id, 0)}")
        if not cache.add(key, 1, timeout=int(REDRIVE_WINDOW.total_seconds()) * 2):
            continue
        if enqueueing.enqueue(message_id):
            sent += 1
        else:
            cache.delete(key)
    if sent:
        logger.info("AI reply tasks re-driven: %s", sent)
    return sent
