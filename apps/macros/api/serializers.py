"""Inputs and documented shapes of the macro routes."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from apps.agents.models import Agent
from apps.automation.actions import ACTION_TYPES, MAX_ACTIONS
from apps.core.api.query import IdQueryField
from apps.core.api.serializers import InputSerializer, LabelField, TenantPrimaryKeyField

from ..models import NAME_MAX, Macro

ACTION_SCHEMA = {
    "type": "object",
    "required": ["type"],
    "properties": {
        "type": {"type": "string", "enum": list(ACTION_TYPES)},
        "text": {
            "type": "string",
            "maxLength": 4000,
            "description": "send_message (canned variables allowed), add_note.",
        },
        "labels": {"type": "array", "items": {"type": "string"}, "description": "add_labels, remove_labels: names."},
        "agent_id": {"type": "integer", "description": "assign_agent: an agent of this widget, not banned."},
        "department_id": {"type": "integer", "description": "assign_department: a department of this widget."},
    },
    "additionalProperties": False,
}
ACTIONS_HELP = (
    f"1 to {MAX_ACTIONS} actions, run in order: `send_message {{text}}` (canned variables allowed), "
    "`add_note {text}`, `add_labels {labels}`, `remove_labels {labels}`, `assign_agent {agent_id}`, "
    "`assign_department {department_id}`, `close`. Faults are 422 with `errors` keyed `actions.<i>.<member>`; "
    "label names are stored as the widget spells them."
)


@extend_schema_field({"type": "array", "items": ACTION_SCHEMA, "minItems": 1, "maxItems": MAX_ACTIONS})
class ActionsField(serializers.JSONField):
    """The list as sent; its shape is checked against the widget by the service (validate_actions)."""


def _not_blank(value: str) -> None:
    if not value.strip():
        raise serializers.ValidationError("Must contain a visible character.")


class MacroDoc(serializers.Serializer):
    id = serializers.IntegerField(help_text="The macro's id.")
    name = serializers.CharField(help_text="The macro's name.")
    visibility = serializers.ChoiceField(
        choices=Macro.Visibility.values, help_text="`all` (every operator's) or `personal` (one operator's)."
    )
    agent_id = serializers.IntegerField(
        allow_null=True, help_text="The operator of a personal macro; null when shared."
    )
    actions = ActionsField(help_text="The actions, in order.")
    created_at = serializers.DateTimeField(help_text="When it was created.")
    updated_at = serializers.DateTimeField(help_text="When it last changed.")


class MacroInput(InputSerializer):
    name = LabelField(
        max_length=NAME_MAX,
        validators=[_not_blank],
        help_text=f"1 to {NAME_MAX} characters, stored in NFC; invisible and bidirectional-control characters "
        "are refused.",
    )
    visibility = serializers.ChoiceField(
        choices=Macro.Visibility.values,
        required=False,
        default=Macro.Visibility.ALL,
        help_text="`all` (the default: every operator sees it) or `personal` (only `agent_id` sees it).",
    )
    agent_id = TenantPrimaryKeyField(
        queryset=Agent.objects.all(),
        required=False,
        allow_null=True,
        missing="422",
        help_text="The human operator a `personal` macro belongs to: required for `personal`, refused for `all`.",
    )
    actions = ActionsField(help_text=ACTIONS_HELP)


class MacroPatchInput(MacroInput):
    """Any subset of the members; the others keep their values."""


class MacroListQuery(InputSerializer):
    empty_is_valid = True
    visibility = serializers.ChoiceField(
        choices=Macro.Visibility.values, required=False, help_text="Only `all` or only `personal` macros."
    )
    agent_id = IdQueryField(required=False, help_text="Only the personal macros of this operator.")


class EmptyInput(InputSerializer):
    """No body members are accepted."""


class MacroRunDoc(serializers.Serializer):
    chat_id = serializers.IntegerField(help_text="The chat the macro ran on.")
    actions_run = serializers.IntegerField(help_text="How many actions ran: all of them.")
