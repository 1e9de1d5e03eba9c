"""Web Push's event-bus handlers (registered in PushConfig.ready()) and the SLA warning pass.

- chat.assigned, in the transaction (where the request's audit actor is still known; the push
  itself is queued for after the commit): the operator the chat was given to is told, unless they
  took it themselves (the actor is that very operator).
- routing.queue_changed `joined`, after the commit: the widget's active operators are told a
  visitor waits, unless routing already gave the chat to someone (its handler serves the queue
  first: the push app is installed after routing).
- agent.profile_changed, in the transaction: a suspended or deleted operator's devices go.
- The beat job apps.push.tasks.sla_warnings: the assignee of a clock about to breach is told.
"""

from __future__ import annotations

import logging

from apps.agents.models import Agent
from apps.audit import services as audit
from apps.audit.models import AuditEntry
from apps.chats.models import Chat
from apps.core import events
from apps.routing import sla
from apps.routing.models import ChatRouting

from . import notify, selectors, services

logger = logging.getLogger(__name__)


def _chat(event: events.Event) -> Chat | None:
    chat = event.obj("chat")
    if chat is not None:
        return chat
    return Chat.objects.filter(widget=event.widget, pk=event.data["chat_id"]).first()


def chat_assigned(event: events.Event) -> None:
    agent_id = event.data["agent_id"]
    if agent_id is None:
        return
    actor = audit.current_actor()
    if actor.type == AuditEntry.ActorType.AGENT and actor.id == str(agent_id):
        return
    chat = _chat(event)
    if chat is not None:
        notify.notify(agent_id, "assigned", chat)


def queue_joined(event: events.Event) -> None:
    if event.data["change"] != "joined":
        return
    if not ChatRouting.objects.filter(chat_id=event.data["chat_id"], queue_since__isnull=False).exists():
        return  # served at once: the assignee hears about it through chat.assigned
    chat = _chat(event)
    if chat is not None:
        notify.notify_agents(selectors.queue_watchers(event.widget), "queue", chat)


def agent_changed(event: events.Event) -> None:
    agent = event.obj("agent")
    if agent is not None and agent.status == Agent.Status.BANNED:
        services.forget_agent(widget_id=event.widget.pk, agent_id=agent.pk)


def warn_sla_clocks() -> int:
    """Mark the clocks entering their warning window and tell each chat's assignee (none: nobody)."""
    told = 0
    for clock in sla.warn_due():
        chat = clock.chat
        if chat.agent_id is None:
            continue
        try:
            told += notify.notify(chat.agent_id, "sla", chat)
        except Exception:  # noqa: BLE001 - the clock is marked; a lost warning must not stop the pass
            logger.exception("SLA warning for clock %s not sent", clock.pk)
    return told


def register() -> None:
    events.subscribe(events.CHAT_ASSIGNED, chat_assigned, phase=events.IN_TRANSACTION)
    events.subscribe(events.QUEUE_CHANGED, queue_joined, phase=events.ON_COMMIT)
    events.subscribe(events.AGENT_PROFILE_CHANGED, agent_changed, phase=events.IN_TRANSACTION)
