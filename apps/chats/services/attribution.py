"""Who answered a chat: acceptance, the operator handling it, the handling path (AI, people, the
hand-overs between them) and the wait for a person after a machine hands over."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from apps.agents.models import Agent
from apps.core import events
from apps.core.models import Widget

from ..models import Chat
from .locking import lock_chat

_NEXT_HANDLING = {
    # (current handling, operator type now answering) -> new handling
    (Chat.Handling.MISSED, "human"): Chat.Handling.HUMAN,
    (Chat.Handling.MISSED, "ai"): Chat.Handling.AI,
    (Chat.Handling.AI, "human"): Chat.Handling.AI_TO_HUMAN,
    (Chat.Handling.HUMAN_TO_AI, "human"): Chat.Handling.AI_TO_HUMAN,
    (Chat.Handling.HUMAN, "ai"): Chat.Handling.HUMAN_TO_AI,
    (Chat.Handling.AI_TO_HUMAN, "ai"): Chat.Handling.HUMAN_TO_AI,
}


def _operator_type(agent: Agent) -> str:
    # An external (webhook) operator is an external AI operator: a machine, attributed as `ai`.
    machine = agent.type in (Agent.Type.AI, Agent.Type.WEBHOOK)
    return Chat.OperatorType.AI if machine else Chat.OperatorType.HUMAN


@dataclass
class Answer:
    """What `record_answer` changed on the chat: the fields to save, and whether this was the
    chat's first acceptance (chat.accepted is emitted once the chat is saved)."""

    fields: list[str]
    accepted: bool
    # A person answering an unclaimed room became its routing owner (chat.assigned follows).
    claimed: bool = False


def record_answer(*, chat: Chat, agent: Agent, now: datetime) -> Answer:
    """An operator answered the (locked) chat: a person by explicit accept, assignment or a reply;
    the AI operator by a visitor-visible message. Updates accepted_by / handled_by / handling.
    The caller saves the fields and then calls `emit_accepted` when `accepted`."""
    kind = _operator_type(agent)
    changed = []
    accepted = not chat.accepted_by_type
    if accepted:
        chat.accepted_by, chat.accepted_by_type, chat.accepted_at = agent, kind, now
        changed += ["accepted_by", "accepted_by_type", "accepted_at"]
    handling = _NEXT_HANDLING.get((chat.handling, kind), chat.handling)
    if handling != chat.handling:
        chat.handling = handling
        changed.append("handling")
        if handling == Chat.Handling.AI_TO_HUMAN and not chat.went_ai_to_human:
            chat.went_ai_to_human = True
            changed.append("went_ai_to_human")
        elif handling == Chat.Handling.HUMAN_TO_AI and not chat.went_human_to_ai:
            chat.went_human_to_ai = True
            changed.append("went_human_to_ai")
    if chat.handled_by_id != agent.pk:
        chat.handled_by, chat.handled_by_type, chat.handled_at = agent, kind, now
        changed += ["handled_by", "handled_by_type", "handled_at"]
    # A person answering an unclaimed room claims it; the AI operator never becomes owner.
    claimed = kind == Chat.OperatorType.HUMAN and chat.agent_id is None
    if claimed:
        chat.agent = agent
        changed.append("agent")
    # A person answering a chat handed to people ends the wait (a machine answering does not).
    if agent.type == Agent.Type.HUMAN and chat.awaiting_human_since is not None:
        chat.awaiting_human_since = None
        changed.append("awaiting_human_since")
    return Answer(fields=changed, accepted=accepted, claimed=claimed)


def emit_accepted(*, chat: Chat) -> None:
    """chat.accepted for a chat whose first acceptance was just saved."""
    events.emit(
        chat.widget,
        events.CHAT_ACCEPTED,
        objects={"chat": chat},
        chat_id=chat.pk,
        operator_id=chat.accepted_by_id,
        operator_type=chat.accepted_by_type,
        client_id=chat.contact.guid,
    )


# `by` of chat.assigned for a change of routing owner, from the source of the change. A macro is
# `automation` too: the public vocabulary of chat.assigned (webhooks, the routing read) names a macro
# and a rule alike.
ASSIGNED_BY = {"routing": "routing", "console": "agent", "automation": "automation", "macro": "automation"}


def assigned_by(source: str) -> str:
    """`routing`, `agent` (a person in the console), `automation` (a macro or a rule), else `api` (a REST or
    compat call)."""
    return ASSIGNED_BY.get(source, "api")


def emit_assigned(*, chat: Chat, by: str) -> None:
    """chat.assigned for a change of the (locked, saved) chat's routing owner; `agent_id` null when
    the chat went back to the queue."""
    events.emit(
        chat.widget,
        events.CHAT_ASSIGNED,
        objects={"chat": chat},
        chat_id=chat.pk,
        agent_id=chat.agent_id,
        by=by,
    )


def set_routing_owner(*, widget: Widget, chat: Chat, agent: Agent | None, by: str, locked: bool = False) -> Chat:
    """Routing (or automation) gives the chat to `agent`, or takes it back to the queue with None:
    the routing owner changes and nothing else (the operator accepts the chat by answering it).
    chat.assigned once; the owner the chat already has changes nothing. Only the owner's id is
    written, so `agent` may be an `Agent` carrying just its id, widget and type (routing's choice).

    `locked=True`: the caller took `chat` from `lock_chat` in the transaction this call runs in."""
    if agent is not None and (agent.widget_id != widget.pk or agent.type != Agent.Type.HUMAN):
        raise AssertionError("a routing owner is a human agent of the widget")
    with transaction.atomic(savepoint=False):
        if not locked:
            chat = lock_chat(widget=widget, chat=chat)
        agent_id = agent.pk if agent is not None else None
        if chat.agent_id == agent_id:
            return chat
        chat.agent_id = agent_id
        chat.updated_at = timezone.now()
        chat.save(update_fields=["agent", "updated_at"])
        emit_assigned(chat=chat, by=by)
    return chat


@transaction.atomic
def await_human(*, widget: Widget, chat: Chat, reason: str, operator: Agent | None = None) -> Chat:
    """A machine operator (`operator`, when known) handed the chat to people: it waits for a person
    (no machine answers it) until one answers (`record_answer` clears the mark). Emits
    chat.awaiting_human once; a chat already waiting changes nothing and emits nothing."""
    chat = lock_chat(widget=widget, chat=chat)
    if chat.awaiting_human_since is not None:
        return chat
    chat.awaiting_human_since = chat.updated_at = timezone.now()
    chat.save(update_fields=["awaiting_human_since", "updated_at"])
    events.emit(
        widget,
        events.CHAT_AWAITING_HUMAN,
        objects={"chat": chat, "operator": operator},
        chat_id=chat.pk,
        reason=reason,
    )
    return chat
