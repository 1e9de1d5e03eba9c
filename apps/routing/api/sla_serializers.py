"""Inputs and documented shapes of the SLA policy routes."""

from __future__ import annotations

from rest_framework import serializers

from apps.agents.models import Department
from apps.core.api.serializers import (
    InputSerializer,
    LabelField,
    StrictBooleanField,
    StrictIntegerField,
    TenantPrimaryKeyField,
)

from ..sla import SECONDS_RANGE

SECONDS_HELP = "null (no such clock), or {} seconds: {}"
FIRST = "from the visitor's first message to the first visible answer of a person or the AI operator."
NEXT = "from a visitor's message that waits after an answer to the next visible answer."
RESOLUTION = "from the visitor's first message to the chat's closing."
DEPARTMENT_HELP = (
    "The department whose chats take this policy; null: the widget's default, taken by chats whose "
    "department has no policy. One policy per department (409 `sla_department_taken`) and one default "
    "(409 `sla_default_exists`); a department of another widget is 422 like a missing one."
)
HOURS_HELP = "Count only the widget's open time (its business hours): the clocks stop while it is closed."
RANGE = f"{SECONDS_RANGE[0]}..{SECONDS_RANGE[1]}"


def _not_blank(value: str) -> None:
    if not value.strip():
        raise serializers.ValidationError("Must contain a visible character.")


def _seconds(what: str) -> StrictIntegerField:
    return StrictIntegerField(
        allow_null=True,
        required=False,
        default=None,
        min_value=SECONDS_RANGE[0],
        max_value=SECONDS_RANGE[1],
        help_text=SECONDS_HELP.format(RANGE, what),
    )


class SlaPolicyDoc(serializers.Serializer):
    id = serializers.IntegerField(help_text="The policy's id.")
    name = serializers.CharField(help_text="The policy's name.")
    department_id = serializers.IntegerField(allow_null=True, help_text=DEPARTMENT_HELP)
    first_response_seconds = serializers.IntegerField(allow_null=True, help_text=SECONDS_HELP.format(RANGE, FIRST))
    next_response_seconds = serializers.IntegerField(allow_null=True, help_text=SECONDS_HELP.format(RANGE, NEXT))
    resolution_seconds = serializers.IntegerField(allow_null=True, help_text=SECONDS_HELP.format(RANGE, RESOLUTION))
    business_hours_only = serializers.BooleanField(help_text=HOURS_HELP)


class SlaPolicyInput(InputSerializer):
    name = LabelField(
        max_length=200,
        validators=[_not_blank],
        help_text="1 to 200 characters, stored in NFC; invisible and bidirectional-control characters are refused.",
    )
    department_id = TenantPrimaryKeyField(
        queryset=Department.objects.all(),
        missing="422",
        allow_null=True,
        required=False,
        default=None,
        help_text=DEPARTMENT_HELP,
    )
    first_response_seconds = _seconds(FIRST)
    next_response_seconds = _seconds(NEXT)
    resolution_seconds = _seconds(RESOLUTION)
    business_hours_only = StrictBooleanField(required=False, default=False, help_text=HOURS_HELP)


class SlaPolicyPatchInput(SlaPolicyInput):
    """Any subset of the members; the others keep their values."""


class SlaListQuery(InputSerializer):
    """The list takes only the pagination's `cursor` and `limit`."""

    empty_is_valid = True
