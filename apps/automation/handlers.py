"""The rules' event-bus handler: at emit time (in the change's transaction) it decides whether the
event can trigger rules and, once the change commits, hands it to a worker. That hand-off is all the
web process does for automation: one read of the widget config's cache (the events its enabled rules
react to) and, for such an event, one broker message after the commit; no statement."""

from __future__ import annotations

import logging

from django.db import transaction

from apps.core import events, queueing

from . import selectors
from .context import rule_running
from .models import EVENTS

logger = logging.getLogger(__name__)

RUN_TASK = "apps.automation.tasks.run_rules"


def hand_off(event: events.Event) -> None:
    """In-transaction handler of the six rule events. Skips an event caused by a rule's own actions
    (no loops), `message.created` of anything but a visitor's message, and an event no enabled rule
    of the widget reacts to."""
    if rule_running():
        return
    if event.type == events.MESSAGE_CREATED and event.data.get("author_type") != "USER":
        return
    if not _has_rules(event):
        return
    args = (event.widget.pk, event.type, _data(event.data))
    transaction.on_commit(lambda: _send(args))


def _has_rules(event: events.Event) -> bool:
    try:
        return event.type in selectors.rule_events(event.widget)
    except Exception:  # the cache is down: the worker decides, from the rules themselves
        logger.warning("automation rules read past the cache", extra={"event_type": event.type}, exc_info=True)
        return True


# What the worker is handed: the ids it refetches by and the event's own non-personal members (a
# rule's webhook reports them); the offline form's name, e-mail and phone stay out of the broker.
PASSED = ("chat_id", "message_id", "agent_id", "by", "reason", "policy_id", "kind", "source")


def _data(data: dict) -> dict:
    return {key: data[key] for key in PASSED if key in data}


def _send(args: tuple) -> None:
    try:
        queueing.task(RUN_TASK).apply_async(args)
    except Exception:  # broker down: rules are best effort, the change itself is committed
        logger.warning("automation hand-off failed", extra={"event_type": args[1]})


__all__ = ["EVENTS", "hand_off"]
