"""Writes of the AI operators: an agent of type `ai` that runs an assistant, created, changed and
retired through the agents services, each change recorded in the audit log (`ai_operator.*`).
`apps.ai.services` carries these names for the callers above."""

from __future__ import annotations

from django.db import transaction

from apps.agents import services as agent_services
from apps.agents.models import Agent
from apps.audit import services as audit
from apps.core.models import Widget

from .errors import AssistantMissing
from .models import Assistant

OPERATOR_STATUS_TO_AGENT = {
    "active": Agent.Status.ACTIVE,
    "paused": Agent.Status.RELAXATION,
    "retired": Agent.Status.BANNED,
}


@transaction.atomic
def create_operator(
    *,
    widget: Widget,
    assistant: Assistant,
    name: str | None = None,
    show_in_header: bool = True,
    status: str = "active",
) -> Agent:
    assert assistant.widget_id == widget.pk
    operator = agent_services.create_ai_agent(
        widget=widget,
        name=name or assistant.name,
        assistant_id=assistant.pk,
        show_in_header=show_in_header,
        status=OPERATOR_STATUS_TO_AGENT[status],
    )
    audit.record_row(
        widget=widget, target_type=OPERATOR_AUDIT, target_id=operator.pk, before=None, after=_operator_values(operator)
    )
    return operator


OPERATOR_AUDIT = "ai_operator"  # audit rows: ai_operator.created, .changed
_AGENT_STATUS_TO_OPERATOR = {agent: api for api, agent in OPERATOR_STATUS_TO_AGENT.items()}


def _operator_values(operator: Agent) -> dict:
    """An AI operator as the API names its fields."""
    return {
        "name": operator.name,
        "assistant_id": operator.ai_assistant_id,
        "show_in_header": operator.show_in_header,
        "status": _AGENT_STATUS_TO_OPERATOR.get(operator.status, operator.status),
    }


@transaction.atomic
def update_operator(*, widget: Widget, operator: Agent, changes: dict) -> Agent:
    """Rename, rebind, show_in_header, status (`active` revives a retired operator, which needs an
    existing assistant)."""
    assert operator.widget_id == widget.pk and operator.type == Agent.Type.AI
    agent_changes = {}
    if "name" in changes:
        agent_changes["name"] = changes["name"]
    if "show_in_header" in changes:
        agent_changes["show_in_header"] = changes["show_in_header"]
    if "assistant" in changes:
        agent_changes["ai_assistant_id"] = changes["assistant"].pk
    if "status" in changes:
        agent_changes["status"] = OPERATOR_STATUS_TO_AGENT[changes["status"]]
        assistant_id = agent_changes.get("ai_assistant_id", operator.ai_assistant_id)
        if changes["status"] != "retired" and not Assistant.objects.filter(widget=widget, pk=assistant_id).exists():
            raise AssistantMissing("Bind the operator to an assistant (`assistant_id`) to change its status.")
    before = _operator_values(operator)
    operator = agent_services.update_ai_agent(widget=widget, agent=operator, changes=agent_changes)
    audit.record_row(
        widget=widget,
        target_type=OPERATOR_AUDIT,
        target_id=operator.pk,
        before=before,
        after=_operator_values(operator),
    )
    return operator


def retire_operator(*, widget: Widget, operator: Agent) -> Agent:
    return update_operator(widget=widget, operator=operator, changes={"status": "retired"})
