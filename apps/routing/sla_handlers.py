"""SLA clocks on the event bus (registered by RoutingConfig.ready()), in the change's transaction so
a clock starts and stops with the message or the close that moves it.

- The visitor's first message of a chat starts `first_response` and `resolution` under the chat's
  policy (its department's, else the widget's default; none: no clocks).
- A later visitor message starts `next_response` when the chat has had a visible answer and no
  `next_response` clock is running (an unanswered message after an answer).
- The first visible message of a person or the AI operator stops `first_response` and
  `next_response` (met when by the due time); closing the chat stops `resolution` likewise.
  Response clocks still running at the close stop undecided unless already past due.

After the commit, each started clock is also put on a Celery countdown to its due time (precision);
the beat job `apps.routing.tasks.sla_breaches` is the durable timer either way.
"""

from __future__ import annotations

import logging

from django.db import transaction
from django.utils import timezone

from apps.chats.models import Message
from apps.core import events, queueing

from . import sla
from .handlers import celery_runs_eagerly
from .models import SlaClock

logger = logging.getLogger(__name__)

RESPONSES = (SlaClock.Kind.FIRST_RESPONSE, SlaClock.Kind.NEXT_RESPONSE)
ANSWERS = (Message.Author.AGENT, Message.Author.AI)


def _countdown(clock: SlaClock) -> None:
    """Wake the breach task at the clock's due time (skipped where Celery runs in place: it would not
    wait; the beat job breaches the clock)."""
    if celery_runs_eagerly():
        return

    def enqueue() -> None:
        seconds = max((clock.due_at - clock.started_at).total_seconds(), 0.0)
        try:
            queueing.task("apps.routing.tasks.sla_clock_due").apply_async((clock.pk,), countdown=seconds + 0.5)
        except Exception:  # noqa: BLE001 - the broker is down: the beat job finds the due clock
            logger.warning("SLA timer of clock %s not enqueued", clock.pk, exc_info=True)

    transaction.on_commit(enqueue)


def _start(event: events.Event, chat, policy, kinds, now) -> None:
    for kind in kinds:
        clock = sla.start_clock(widget=event.widget, chat=chat, policy=policy, kind=kind, now=now)
        if clock is not None:
            _countdown(clock)


def message_created(event: events.Event) -> None:
    chat, message = event.obj("chat"), event.obj("message")
    if chat is None or message is None:
        return
    if not sla.widget_has_policies(event.widget):
        return  # no policy, no running clock (deleting a policy stops its clocks)
    now = message.created_at
    if message.author_kind == Message.Author.CLIENT:
        policy = sla.policy_for(chat)
        if policy is None:
            return
        earlier = Message.objects.filter(chat_id=chat.pk, author_kind=Message.Author.CLIENT).exclude(pk=message.pk)
        if not earlier.exists():
            _start(event, chat, policy, (SlaClock.Kind.FIRST_RESPONSE, SlaClock.Kind.RESOLUTION), now)
            return
        waiting = SlaClock.objects.filter(chat_id=chat.pk, kind__in=RESPONSES, stopped_at__isnull=True)
        answered = Message.objects.filter(
            chat_id=chat.pk, author_kind__in=ANSWERS, visibility=Message.Visibility.PUBLIC
        ).exclude(pk=message.pk)
        if not waiting.exists() and answered.exists():
            _start(event, chat, policy, (SlaClock.Kind.NEXT_RESPONSE,), now)
    elif message.author_kind in ANSWERS and message.visibility == Message.Visibility.PUBLIC:
        sla.stop_clocks(widget=event.widget, chat=chat, kinds=RESPONSES, now=now)


def chat_closed(event: events.Event) -> None:
    chat = event.obj("chat")
    if chat is None:
        return
    if not sla.widget_has_policies(event.widget):
        return
    now = chat.closed_at or timezone.now()
    sla.stop_clocks(widget=event.widget, chat=chat, kinds=(SlaClock.Kind.RESOLUTION,), now=now)
    sla.stop_clocks(widget=event.widget, chat=chat, kinds=RESPONSES, now=now, decide=False)


def register() -> None:
    events.subscribe(events.MESSAGE_CREATED, message_created, phase=events.IN_TRANSACTION)
    events.subscribe(events.CHAT_CLOSED, chat_closed, phase=events.IN_TRANSACTION)
