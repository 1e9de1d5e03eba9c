"""Inputs and documented shapes of the external-operator routes and of `POST /v1/ai/replies`."""

from __future__ import annotations

from rest_framework import serializers

from apps.core.api.serializers import InputSerializer, StrictBooleanField, StrictCharField, StrictIntegerField

from ..models import ExternalOperator

STATES = [s.value for s in ExternalOperator.State]


class _OperatorFields(serializers.Serializer):
    public_id = serializers.CharField(help_text="`xop_...`: the id in the routes.")
    name = serializers.CharField(help_text="The operator's name.")
    url = serializers.CharField(help_text="The https endpoint that receives the signed calls now.")
    state = serializers.ChoiceField(
        choices=STATES,
        help_text="`testing` (probes only), `active` (receives visitor messages), `paused` (deliveries held, "
        "reversible), `revoked` (final kill switch), `rotating` (a URL change: calls queued for the old URL "
        "still drain there; new calls go to `url`).",
    )
    agent_id = serializers.IntegerField(help_text="Its `webhook`-type agent (the author of its messages).")
    draining_url = serializers.CharField(allow_null=True, help_text="While `rotating`: the old URL being drained.")
    draining_pending = serializers.IntegerField(help_text="While `rotating`: calls still undelivered to the old URL.")
    resume_state = serializers.CharField(
        allow_null=True, help_text="While `rotating`: the state the operator returns to when the drain ends."
    )
    created_at = serializers.DateTimeField(help_text="When the operator was created.")
    updated_at = serializers.DateTimeField(help_text="When the operator was last changed.")


class ExternalOperatorDoc(_OperatorFields):
    """An external (webhook) operator. Never shows its signing secret."""


class ExternalOperatorPatchInput(InputSerializer):
    """Merge-safe: `name` renames (its agent too); `url` replaces the endpoint (https, public address)."""

    name = StrictCharField(required=False, max_length=150, help_text="A new name, up to 150 characters.")
    url = StrictCharField(required=False, max_length=2048, help_text="A new https endpoint for the signed calls.")


class LifecycleInput(InputSerializer):
    state = serializers.ChoiceField(
        choices=["testing", "active", "paused", "revoked"],
        help_text="`rotating` is entered by a URL change only.",
    )


class EmptyInput(InputSerializer):
    """No members (an empty body or `{}`)."""


class ForceDrainDoc(_OperatorFields):
    """The operator after the drain was broken."""

    abandoned = serializers.IntegerField(help_text="Calls to the old URL skipped, never to be sent.")


class ProbeAttemptDoc(serializers.Serializer):
    number = serializers.IntegerField(help_text="The attempt's number, from 1.")
    at = serializers.DateTimeField(help_text="When the attempt started.")
    status_code = serializers.IntegerField(
        allow_null=True, help_text="The endpoint's HTTP status; null when none came."
    )
    error = serializers.CharField(allow_null=True, help_text="`http_<status>`, a transport reason, or null on 2xx.")
    duration_ms = serializers.IntegerField(help_text="From the start of the attempt to its end, in milliseconds.")


class ProbeDoc(serializers.Serializer):
    """One `delivery.test` probe: `pending` until delivered, `failed` after the last attempt, or
    `skipped` when the operator was revoked before it went out."""

    public_id = serializers.CharField(help_text="`xtest_...`.")
    operator_id = serializers.CharField(help_text="The operator's `public_id`.")
    status = serializers.ChoiceField(
        choices=["pending", "delivered", "failed", "skipped"],
        help_text="`pending`, `delivered`, `failed` or `skipped`.",
    )
    delivery_id = serializers.UUIDField(help_text="`X-Service-Delivery` of the probe.")
    causation_id = serializers.UUIDField(help_text="The probe call's `causation_id`.")
    url = serializers.CharField(help_text="Where the probe is sent.")
    attempts = ProbeAttemptDoc(many=True, help_text="Every attempt made, oldest first.")
    next_attempt_at = serializers.DateTimeField(
        allow_null=True, help_text="When the next attempt is due; null once the probe settled."
    )
    created_at = serializers.DateTimeField(help_text="When the probe was queued.")


class ExternalReplyInput(InputSerializer):
    room_id = StrictIntegerField(min_value=1, help_text="The chat id the call named (`data.chat_id`).")
    causation_id = StrictCharField(max_length=64, help_text="The `causation_id` of the call being answered.")
    content = StrictCharField(
        required=False, allow_blank=True, max_length=65536, trim_whitespace=False, help_text="The answer's text."
    )
    escalate = StrictBooleanField(required=False, default=False, help_text="Hand the chat to people.")


class ExternalReplyDoc(serializers.Serializer):
    outcome = serializers.ChoiceField(
        choices=["posted", "handed_off", "discarded"],
        help_text="`posted`: the content is the operator's message; `handed_off`: the chat waits for a person "
        "(escalation, the marker, empty content or a platform safety floor); `discarded`: a person took the chat "
        "meanwhile.",
    )
    message_id = serializers.IntegerField(allow_null=True, help_text="The stored message; null when none was posted.")
    room_id = serializers.IntegerField(help_text="The chat the reply went to.")
