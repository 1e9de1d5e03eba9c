"""Inputs and documented shapes of the automation-rule routes. The members' rules (events, fields,
operators, regular expressions, actions) are the services', so the owner's console page answers
with the same words (apps.automation.services.validate_rule)."""

from __future__ import annotations

from rest_framework import serializers

from apps.core.api.serializers import InputSerializer, LabelField, StrictBooleanField

from ..actions import ACTION_TYPES, SEND_WEBHOOK
from ..conditions import FIELDS, OPS
from ..models import EVENTS

CONDITIONS_HELP = (
    "All must hold. Each is `{field, op, value}`: field one of "
    + ", ".join(f"`{name}`" for name in FIELDS)
    + "; op one of "
    + ", ".join(f"`{name}`" for name in OPS)
    + " (`department_id` takes equals, not_equals, in; `business_hours.open` equals, not_equals with true or "
    "false). `in` takes a list; `matches` a regular expression (an invalid one is 422), run with a time "
    "limit. Text compares without regard to case, except `matches`. At most 20."
)
ACTIONS_HELP = (
    'In order, 1 to 10, each `{"type": <name>, ...its members}`: '
    + ", ".join(f"`{name}`" for name in (*ACTION_TYPES, SEND_WEBHOOK))
    + ". Ids and label names must be this widget's; a `send_webhook` URL must be one of the widget's "
    "webhook subscriptions (its secret signs the call)."
)


class ConditionDoc(serializers.Serializer):
    field = serializers.CharField(help_text="What is compared (see the rule's `conditions`).")
    op = serializers.ChoiceField(choices=OPS, help_text="How it is compared.")
    value = serializers.JSONField(help_text="A text, a list (`in`), an id (`department_id`) or a boolean.")


class AutomationRuleDoc(serializers.Serializer):
    id = serializers.IntegerField(help_text="The rule's id; rules of one event run in order of id.")
    name = serializers.CharField(help_text="1 to 100 characters.")
    enabled = serializers.BooleanField(help_text="A disabled rule never runs.")
    event = serializers.ChoiceField(choices=EVENTS, help_text="When the rule runs.")
    conditions = ConditionDoc(many=True, help_text=CONDITIONS_HELP)
    actions = serializers.ListField(child=serializers.DictField(), help_text=ACTIONS_HELP)
    created_at = serializers.DateTimeField(help_text="When it was created.")
    updated_at = serializers.DateTimeField(help_text="When it last changed.")


class AutomationRuleInput(InputSerializer):
    name = LabelField(max_length=100, help_text="1 to 100 characters, stored in NFC.")
    enabled = StrictBooleanField(required=False, default=True, help_text="Default true.")
    event = serializers.ChoiceField(choices=EVENTS, help_text="When the rule runs.")
    conditions = serializers.JSONField(required=False, default=list, help_text=CONDITIONS_HELP)
    actions = serializers.JSONField(help_text=ACTIONS_HELP)


class AutomationRulePatchInput(AutomationRuleInput):
    """Any subset of the members; the others keep their values."""


class AutomationRunDoc(serializers.Serializer):
    at = serializers.DateTimeField(help_text="When the rule was evaluated.")
    chat_id = serializers.IntegerField(allow_null=True, help_text="The chat the event was about.")
    outcome = serializers.ChoiceField(
        choices=("matched", "not_matched", "failed"),
        help_text="matched: the conditions held and every action ran; failed: an action was refused (nothing "
        "changed) or a regular expression ran out of time.",
    )
    detail = serializers.CharField(help_text="What ran, or why it failed (the refusal's own words).")


class AutomationRunsDoc(serializers.Serializer):
    data = AutomationRunDoc(many=True, help_text="The rule's last 100 runs, newest first.")
