"""Writes of macros, and running one on a chat. Every rule the API states is enforced here, so the
REST routes, the owner's settings page and admin share it; each write leaves an audit row."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone

from apps.agents.models import Agent
from apps.audit import services as audit
from apps.automation import actions as engine
from apps.chats.models import Chat
from apps.core.errors import ValidationFailed
from apps.core.models import Widget

from .models import Macro

AUDIT = "macro"  # audit rows: macro.created, .changed, .deleted


def _owner(widget: Widget, visibility: str, agent: Agent | None) -> Agent | None:
    """The agent a macro of `visibility` stores: a human operator of the widget for a personal one,
    none for a shared one."""
    if visibility == Macro.Visibility.ALL:
        if agent is not None:
            raise ValidationFailed(
                "One or more fields are invalid.", errors={"agent_id": ["Only a personal macro has an agent."]}
            )
        return None
    if agent is None:
        raise ValidationFailed(
            "One or more fields are invalid.", errors={"agent_id": ["Required for a personal macro."]}
        )
    if agent.widget_id != widget.pk:
        raise AssertionError("agent must belong to the widget")
    if agent.type != Agent.Type.HUMAN:
        raise ValidationFailed("One or more fields are invalid.", errors={"agent_id": ["Must be a human operator."]})
    return agent


def check_macro(*, widget: Widget, visibility: str, agent: Agent | None, actions: Any) -> list[dict]:
    """The checks of a write, without writing (admin's form): the owner and the actions."""
    _owner(widget, visibility, agent)
    return engine.validate_actions(widget=widget, actions=actions, allow_webhook=False)


@transaction.atomic
def create_macro(
    *, widget: Widget, name: str, actions: Any, visibility: str = Macro.Visibility.ALL, agent: Agent | None = None
) -> Macro:
    agent = _owner(widget, visibility, agent)
    stored = engine.validate_actions(widget=widget, actions=actions, allow_webhook=False)
    now = timezone.now()
    row = Macro.objects.create(
        widget=widget, name=name, visibility=visibility, agent=agent, actions=stored, created_at=now, updated_at=now
    )
    audit.record_row(widget=widget, target_type=AUDIT, target_id=row.pk, before=None, after=audit.values(row))
    return row


@transaction.atomic
def update_macro(*, widget: Widget, macro: Macro, changes: dict[str, Any]) -> Macro:
    """Merge `changes` (any of name, visibility, agent, actions). Moving a macro to `all` drops its
    agent; moving it to `personal` needs one (sent, or the one it had)."""
    assert macro.widget_id == widget.pk
    row = Macro.objects.select_for_update().get(pk=macro.pk, widget=widget)
    before = audit.values(row)
    visibility = changes.get("visibility", row.visibility)
    if "agent" in changes:
        agent = changes["agent"]
    elif visibility == Macro.Visibility.ALL:
        agent = None
    else:
        agent = row.agent
    row.agent = _owner(widget, visibility, agent)
    row.visibility = visibility
    if "name" in changes:
        row.name = changes["name"]
    if "actions" in changes:
        row.actions = engine.validate_actions(widget=widget, actions=changes["actions"], allow_webhook=False)
    row.updated_at = timezone.now()
    row.save()
    audit.record_row(widget=widget, target_type=AUDIT, target_id=row.pk, before=before, after=audit.values(row))
    return row


@transaction.atomic
def delete_macro(*, widget: Widget, macro: Macro) -> None:
    assert macro.widget_id == widget.pk
    row = Macro.objects.select_for_update().filter(pk=macro.pk, widget=widget).first()
    if row is None:
        return
    before = audit.values(row)
    row.delete()
    audit.record_row(widget=widget, target_type=AUDIT, target_id=macro.pk, before=before, after=None)


def run_macro(*, widget: Widget, chat: Chat, macro: Macro, actor: Agent | None) -> int:
    """Run the macro's actions on `chat`, all or nothing (422 `macro_action_refused` naming the
    refused one); returns how many ran. `actor`: the console's operator, None for an API token."""
    assert macro.widget_id == widget.pk and chat.widget_id == widget.pk
    return engine.run_actions(widget=widget, chat=chat, actions=list(macro.actions), actor=actor, by="macro")
