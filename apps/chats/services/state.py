"""The chat's status (active, ready, expired, spam), its close, transfers and explicit accepts."""

from __future__ import annotations

from datetime import datetime

from django.db import transaction
from django.utils import timezone

from apps.agents.models import Agent, Department
from apps.agents.services import record_agent_event
from apps.core import events
from apps.core.models import Widget

from ..models import Chat, ChatTransfer
from .attribution import assigned_by, emit_accepted, emit_assigned, record_answer
from .locking import ChatIsSpam, lock_chat


def _expire(chat: Chat, *, reason: str, now: datetime) -> None:
    """Move a locked chat into expired, save it and emit chat.closed (every move into expired emits,
    whoever makes it: POST /close, state `expired`, the console, the idle sweep)."""
    chat.status = Chat.Status.EXPIRED
    chat.closed_at = now
    chat.updated_at = now
    chat.save(update_fields=["status", "closed_at", "updated_at"])
    events.emit(chat.widget, events.CHAT_CLOSED, objects={"chat": chat}, chat_id=chat.pk, reason=reason or "expired")


@transaction.atomic
def close_chat(*, widget: Widget, chat: Chat, reason: str | None = None) -> Chat:
    """POST /close, state `expired` and the operator console: one implementation.

    Closing an already expired chat changes nothing and emits nothing; a spam chat refuses (409).
    """
    chat = lock_chat(widget=widget, chat=chat)
    if chat.status == Chat.Status.EXPIRED:
        return chat
    if chat.status == Chat.Status.SPAM:
        raise ChatIsSpam("A spam chat can only be moved back to active.")
    _expire(chat, reason=reason or "expired", now=timezone.now())
    return chat


def _move_status(chat: Chat, *, status: str, now: datetime, reopen: bool = False) -> None:
    """A locked chat takes a status other than expired: saved, chat.status_changed emitted.
    `reopen` also clears closed_at (the idle sweep's re-activation of a talked-in room)."""
    chat.status = status
    chat.updated_at = now
    fields = ["status", "updated_at"]
    if reopen:
        chat.closed_at = None
        fields.append("closed_at")
    chat.save(update_fields=fields)
    events.emit(chat.widget, events.CHAT_STATUS_CHANGED, objects={"chat": chat}, chat_id=chat.pk, status=status)


@transaction.atomic
def set_chat_state(*, widget: Widget, chat: Chat, state: str, reason: str | None = None) -> Chat:
    """The state table: `active` always (even from spam); from spam anything else is 409; `ready`
    is written and replaced at the next lifecycle tick; `expired` is close."""
    if state == Chat.Status.EXPIRED:
        return close_chat(widget=widget, chat=chat, reason=reason)
    chat = lock_chat(widget=widget, chat=chat)
    if chat.status == Chat.Status.SPAM and state != Chat.Status.ACTIVE:
        raise ChatIsSpam("A spam chat can only be moved back to active.")
    if chat.status != state:
        _move_status(chat, status=state, now=timezone.now())
    return chat


@transaction.atomic
def transfer_chat(*, widget: Widget, chat: Chat, to_agent: Agent, source: str = "api") -> Chat:
    """Hand the chat to another agent of this widget: routing owner and handler change, a transfer
    row is kept for statistics, chat.transferred is emitted. Assigning an unanswered chat accepts it."""
    chat = lock_chat(widget=widget, chat=chat)
    if chat.status == Chat.Status.SPAM:
        raise ChatIsSpam("A spam chat cannot be transferred.")
    if to_agent.widget_id != widget.pk:
        raise AssertionError("to_agent must belong to the widget")
    now = timezone.now()
    from_agent_id = chat.agent_id
    transfer = ChatTransfer.objects.create(widget=widget, chat=chat, from_agent_id=from_agent_id, to_agent=to_agent)
    if from_agent_id is not None and from_agent_id != to_agent.pk:
        record_agent_event(
            widget=widget,
            agent=from_agent_id,
            type="chat_transferred_out",
            extra={"chat_id": chat.pk, "to_agent_id": to_agent.pk},
        )
    record_agent_event(
        widget=widget,
        agent=to_agent,
        type="chat_transferred_in",
        extra={"chat_id": chat.pk, "from_agent_id": from_agent_id},
    )
    chat.agent = to_agent
    answer = record_answer(chat=chat, agent=to_agent, now=now)
    chat.updated_at = now
    chat.save(update_fields=sorted({"agent", "updated_at", *answer.fields}))
    if answer.accepted:
        emit_accepted(chat=chat)
    if from_agent_id != to_agent.pk:
        emit_assigned(chat=chat, by=assigned_by(source))
    events.emit(
        widget,
        events.CHAT_TRANSFERRED,
        objects={"chat": chat, "transfer": transfer},
        chat_id=chat.pk,
        client_guid=chat.contact.guid,
        from_operator_id=from_agent_id,
        to_operator_id=to_agent.pk,
        author_type="OPERATOR",
        source=source,
    )
    return chat


@transaction.atomic
def set_chat_department(*, widget: Widget, chat: Chat, department: Department | None, by: str) -> Chat:
    """The chat's department (its SLA policy and the statistics by department follow it); the
    assigned operator stays. Emits chat.department_changed once, only when it changed."""
    chat = lock_chat(widget=widget, chat=chat)
    if department is not None and department.widget_id != widget.pk:
        raise AssertionError("department must belong to the widget")
    new_id = department.pk if department is not None else None
    if chat.department_id == new_id:
        return chat
    chat.department = department
    chat.updated_at = timezone.now()
    chat.save(update_fields=["department", "updated_at"])
    events.emit(
        widget, events.CHAT_DEPARTMENT_CHANGED, objects={"chat": chat}, chat_id=chat.pk, department_id=new_id, by=by
    )
    return chat


@transaction.atomic
def accept_chat(*, widget: Widget, chat: Chat, agent: Agent) -> Chat:
    """Explicit accept from the operator console: chat.accepted the first time, chat.attributed
    when an accepted chat changes hands, nothing when this agent already handles it."""
    chat = lock_chat(widget=widget, chat=chat)
    answer = record_answer(chat=chat, agent=agent, now=timezone.now())
    if answer.fields:
        chat.save(update_fields=[*answer.fields, "updated_at"])
        record_agent_event(widget=widget, agent=agent, type="chat_accepted", extra={"chat_id": chat.pk})
        if answer.accepted:
            emit_accepted(chat=chat)
        else:
            events.emit(widget, events.CHAT_ATTRIBUTED, objects={"chat": chat}, chat_id=chat.pk, operator_id=agent.pk)
        if answer.claimed:
            emit_assigned(chat=chat, by="agent")
    return chat
