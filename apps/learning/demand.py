"""Demand signals: what visitors asked that a machine operator could not answer.

Every hand-over from a machine (the built-in AI operator or an external one) to people goes through
`apps.ai.handoff.hand_to_people`, which marks the chat as waiting for a person and emits
`chat.awaiting_human` (chat_id, reason) once. This app sits above `apps.ai` (pyproject's layer
contract), so it records the signal in an in-transaction handler of that event: the signal commits
or rolls back with the hand-over itself.

The reason of the hand-over names the category (`CATEGORIES`):
- `unanswered`: the machine had no answer (the exact marker, a marker in another form, an empty
  answer or reply): what the tuning cycle counts as evidence (`selectors._unanswered`);
- `escalation`: an escalation trigger in the visitor's message, an external operator's `escalate`,
  or the visitor asking for a person (a safety floor);
- `provider_failure`: the provider and every backup failed;
- `safety`: the other platform safety floors (a reply withheld as unsafe).

The topic is the visitor's message that led to the hand-over (whitespace collapsed, case folded, at
most TOPIC_CHARACTERS); one row per widget, category and topic a UTC day, its `count` incremented
and `occurred_at` moved to the latest occurrence.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from datetime import datetime

from django.db.models import F
from django.utils import timezone

from apps.ai.models import DemandSignal
from apps.chats.models import Message
from apps.core import events

logger = logging.getLogger(__name__)

TOPIC_CHARACTERS = 200
SAMPLE_CHARACTERS = 1000

UNANSWERED = DemandSignal.Category.UNANSWERED.value
ESCALATION = DemandSignal.Category.ESCALATION.value
PROVIDER_FAILURE = DemandSignal.Category.PROVIDER_FAILURE.value
SAFETY = DemandSignal.Category.SAFETY.value

CATEGORIES: dict[str, str] = {
    # the built-in AI operator (apps.ai.pipeline.transform, apps.ai.runtime)
    "marker": UNANSWERED,
    "untrusted_marker": UNANSWERED,
    "empty_response": UNANSWERED,
    "trigger": ESCALATION,
    "provider_failure": PROVIDER_FAILURE,
    # external operators (POST /v1/ai/replies)
    "empty_reply": UNANSWERED,
    "escalate": ESCALATION,
}


def category_of(reason: str) -> str:
    """The category of a hand-over reason; the safety floors' reasons (`floor:<name>`) are
    `escalation` when the visitor asked for a person, else `safety`; an unknown reason counts as
    `escalation` (the chat went to people all the same)."""
    if reason.startswith("floor:"):
        return ESCALATION if reason == "floor:person_requested" else SAFETY
    return CATEGORIES.get(reason, ESCALATION)


def normalize_topic(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().casefold()[:TOPIC_CHARACTERS]


def record(*, widget_id: int, category: str, question: str) -> DemandSignal | None:
    """Count one occurrence of `question` in `category` (None when there is no text to count)."""
    topic = normalize_topic(question)
    if not topic:
        return None
    now = timezone.now()
    day = now.replace(hour=0, minute=0, second=0, microsecond=0)
    today = DemandSignal.objects.filter(widget_id=widget_id, occurred_at__gte=day, category=category, topic=topic)
    if today.update(count=F("count") + 1, occurred_at=now):
        return today.first()
    return DemandSignal.objects.create(
        widget_id=widget_id, category=category, topic=topic, sample=question[:SAMPLE_CHARACTERS], occurred_at=now
    )


def forget(*, widget_id: int, questions: Iterable[str], before: datetime | None = None) -> int:
    """Delete the widget's signals whose topic is one of `questions` (a visitor's words, as their
    erasure removes them): the whole row, whoever else asked the same, since its `sample` may be
    theirs; with `before` (retention), only rows last counted before it. Returns how many rows went."""
    topics = {normalize_topic(question) for question in questions} - {""}
    if not topics:
        return 0
    rows = DemandSignal.objects.filter(widget_id=widget_id, topic__in=topics)
    if before is not None:
        rows = rows.filter(occurred_at__lt=before)
    return rows.delete()[0]


def on_awaiting_human(event: events.Event) -> None:
    """In-transaction handler of chat.awaiting_human: the signal of the visitor's last message."""
    question = (
        Message.objects.filter(
            chat_id=event.data["chat_id"], widget_id=event.widget.pk, author_kind=Message.Author.CLIENT
        )
        .order_by("-id")
        .values_list("body", flat=True)
        .first()
    )
    record(
        widget_id=event.widget.pk, category=category_of(str(event.data.get("reason") or "")), question=question or ""
    )
