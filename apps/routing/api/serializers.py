"""Inputs and documented shapes of the routing routes."""

from __future__ import annotations

from rest_framework import serializers

from apps.core.api.serializers import InputSerializer, StrictBooleanField, StrictIntegerField

from ..models import ChatRouting, RoutingSettings, SlaClock
from ..services import CAPACITY_RANGE, REROUTE_RANGE

MODE_HELP = (
    "`manual`: nobody is assigned automatically (an operator accepts, or the API assigns); `round_robin`: "
    "the eligible operator assigned longest ago; `least_busy`: the eligible operator with fewest open chats "
    "(ties: assigned longest ago)."
)


class RoutingSettingsDoc(serializers.Serializer):
    mode = serializers.ChoiceField(choices=RoutingSettings.Mode.values, help_text=MODE_HELP)
    default_capacity = serializers.IntegerField(
        min_value=CAPACITY_RANGE[0],
        max_value=CAPACITY_RANGE[1],
        help_text="Open chats routing gives an operator at most, unless the agent's own `capacity` says otherwise.",
    )
    reroute_after_seconds = serializers.IntegerField(
        allow_null=True,
        min_value=REROUTE_RANGE[0],
        max_value=REROUTE_RANGE[1],
        help_text="An automatically assigned chat whose operator sends nothing visible within this many seconds "
        "moves to the next eligible operator (never back to one who timed out on it); null: never.",
    )
    show_queue_position = serializers.BooleanField(
        help_text="The widget tells a waiting visitor their place in line and the estimated wait."
    )


class RoutingSettingsEnvelope(serializers.Serializer):
    data = RoutingSettingsDoc()


class RoutingSettingsInput(InputSerializer):
    """The whole resource: every member is required."""

    mode = serializers.ChoiceField(choices=RoutingSettings.Mode.values, help_text=MODE_HELP)
    default_capacity = StrictIntegerField(
        min_value=CAPACITY_RANGE[0], max_value=CAPACITY_RANGE[1], help_text="1..50 open chats per operator."
    )
    reroute_after_seconds = StrictIntegerField(
        allow_null=True,
        min_value=REROUTE_RANGE[0],
        max_value=REROUTE_RANGE[1],
        help_text="null, or 15..900 seconds.",
    )
    show_queue_position = StrictBooleanField(help_text="Tell waiting visitors their place in line.")


class SlaBreachDoc(serializers.Serializer):
    kind = serializers.ChoiceField(choices=SlaClock.Kind.values, help_text="Which clock ran out.")
    due_at = serializers.DateTimeField(help_text="When it was due.")
    at = serializers.DateTimeField(help_text="When the breach was recorded.")


class ChatSlaDoc(serializers.Serializer):
    policy_id = serializers.IntegerField(allow_null=True, help_text="The policy that started the latest clock.")
    first_response_due_at = serializers.DateTimeField(
        allow_null=True, help_text="When the first answer is due; null when that clock is not running."
    )
    next_response_due_at = serializers.DateTimeField(
        allow_null=True, help_text="When the answer to the visitor's unanswered message is due; null when none waits."
    )
    resolution_due_at = serializers.DateTimeField(
        allow_null=True, help_text="When the chat is due to be closed; null when that clock is not running."
    )
    breaches = SlaBreachDoc(many=True, help_text="Every clock that ran out, oldest first.")


class ChatRoutingDoc(serializers.Serializer):
    queued_at = serializers.DateTimeField(
        allow_null=True, help_text="When the chat began to wait for a person; null if it never did."
    )
    assigned_at = serializers.DateTimeField(
        allow_null=True, help_text="When its routing owner last changed to a person."
    )
    assigned_by = serializers.ChoiceField(
        choices=ChatRouting.By.values,
        allow_null=True,
        help_text="`routing` (automatic), `agent` (a person in the console), `api` (a REST call) or `automation` "
        "(a macro or rule); null when nobody was ever assigned.",
    )
    reroutes = serializers.IntegerField(help_text="How many times re-routing moved the chat to another operator.")
    sla = ChatSlaDoc(allow_null=True, help_text="The SLA clocks; null when no policy ever applied to the chat.")


class ChatRoutingEnvelope(serializers.Serializer):
    data = ChatRoutingDoc()
