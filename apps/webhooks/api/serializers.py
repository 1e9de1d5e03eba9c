from __future__ import annotations

from rest_framework import serializers

from apps.core.api.serializers import InputSerializer, StrictBooleanField, StrictCharField, StrictUUIDField

from ..catalogue import NATIVE_NAMES
from ..models import Delivery
from ..redelivery import OUTCOMES


class SubscriptionDoc(serializers.Serializer):
    id = serializers.IntegerField(help_text="The subscription's id.")
    url = serializers.CharField(help_text="The receiver's `https://` URL.")
    events = serializers.ListField(
        child=serializers.CharField(),
        help_text="The subscribed event names: native names, or the 5 legacy names when `is_legacy_compat` is true.",
    )
    is_active = serializers.BooleanField(
        help_text="False when the subscription is deactivated: nothing is delivered to it; patchable."
    )
    is_legacy_compat = serializers.BooleanField(
        help_text="True when the subscription takes legacy names and receives the legacy envelope; patchable."
    )
    created_at = serializers.DateTimeField(help_text="When the subscription was created.")
    updated_at = serializers.DateTimeField(help_text="When the subscription was last changed.")


NOT_LIVE_HELP = (
    "The subscribed events that are `Wired` now (see `GET /api/v1/webhook-events`): the subscription "
    "is saved, but nothing is delivered for these until they are enabled platform-wide: by the "
    "deployment's `WEBHOOK_LIVE_EVENTS` setting, or an event switch in Django admin. Empty when "
    "every subscribed event is `Live`."
)


class SubscriptionWrittenDoc(SubscriptionDoc):
    not_live_events = serializers.ListField(child=serializers.CharField(), help_text=NOT_LIVE_HELP)


class SubscriptionCreatedDoc(SubscriptionWrittenDoc):
    secret = serializers.CharField(help_text="Shown once; never readable again.")


class SecretDoc(serializers.Serializer):
    id = serializers.IntegerField(help_text="The subscription's id.")
    secret = serializers.CharField(help_text="The new secret, shown once; the old one stops working now.")


class AttemptDoc(serializers.Serializer):
    number = serializers.IntegerField(help_text="1 to 4.")
    at = serializers.DateTimeField(help_text="When the attempt started.")
    outcome = serializers.ChoiceField(
        choices=list(OUTCOMES),
        help_text="`delivered`: a 2xx answer. `http_error`: any other status (3xx included: redirects are "
        "never followed), see `status_code`. `timeout`: no connection within 3 s or no byte for 10 s; "
        "`deadline_exceeded`: the whole attempt passed 15 s. `tls_error`: the TLS handshake or the "
        "certificate was refused. `connection_error`: refused, reset or closed without an answer. "
        "`resolve_failed`: the host name did not resolve. `invalid_response`: not a readable HTTP answer. "
        "`response_too_large`: an answer over 64 KiB. `blocked`: the destination resolves to an address "
        "that is never called (private, link-local...): permanent, no retry. `missing_secret`: the "
        "signing secret could not be read: permanent.",
    )
    error = serializers.CharField(
        allow_null=True,
        help_text="The raw reason (`http_500`, `tls_error`, `blocked:address_not_allowed`...); null on success.",
    )
    status_code = serializers.IntegerField(
        allow_null=True, help_text="The receiver's HTTP status; null when none came."
    )
    duration_ms = serializers.IntegerField(help_text="From the start of the attempt to its end, in milliseconds.")
    response_excerpt = serializers.CharField(
        allow_null=True,
        help_text="The first 256 bytes of the receiver's answer body, decoded as UTF-8, with personal data "
        "masked as in `payload`; null when the answer had no body or none came.",
    )


class DeliveryDoc(serializers.Serializer):
    delivery_id = serializers.UUIDField(help_text="The delivery's id: what `POST .../redeliver` takes.")
    status = serializers.ChoiceField(
        choices=Delivery.Status.values,
        help_text="`pending`, `delivered`, `failed` or `skipped`; `failed` after the last attempt failed.",
    )
    event_type = serializers.CharField(help_text="The event's name.")
    payload = serializers.JSONField(help_text="What was sent, without button_id, personal data masked as [скрыто].")
    is_redeliverable = serializers.BooleanField(
        help_text=(
            "False for rows that cannot be sent again, such as a native event with no legacy name while "
            "`is_legacy_compat` is true."
        )
    )
    attempts = serializers.IntegerField(help_text="How many attempts were made (at most 4).")
    attempt_log = AttemptDoc(many=True, help_text="Every attempt made, oldest first.")
    next_attempt_at = serializers.DateTimeField(
        allow_null=True,
        help_text="When the next attempt is due (waits of 10, 20 and 40 s after failed attempts 1, 2 and 3); "
        "null once the delivery is `delivered`, `failed` or `skipped`. While an attempt is in flight it "
        "shows the time the engine would retry it if its worker died.",
    )
    created_at = serializers.DateTimeField(help_text="When the delivery was queued.")


class RedeliveryDoc(serializers.Serializer):
    delivery_id = serializers.UUIDField(help_text="The new delivery (new X-Service-Delivery).")
    envelope = serializers.ChoiceField(
        choices=Delivery.Envelope.values,
        help_text="The envelope the subscription uses now, which the redelivery is sent in: `native` or `legacy`.",
    )


class EventTypeDoc(serializers.Serializer):
    name = serializers.CharField(help_text="The event's name, as a subscription lists it.")
    vocabulary = serializers.ChoiceField(
        choices=["native", "legacy"],
        help_text="`native`, or `legacy` for the names a legacy-compat subscription takes.",
    )
    enabled = serializers.BooleanField(help_text="True when the event is delivered now (`Live`).")
    status = serializers.ChoiceField(
        choices=["Live", "Wired"],
        help_text=(
            "`Live`: enabled platform-wide now; `Wired`: emitted but canary-disabled, so a subscription is accepted "
            "and nothing is delivered until it is enabled."
        ),
    )
    triggered_by = serializers.CharField(help_text="When the event fires.")
    data_fields = serializers.ListField(
        child=serializers.CharField(), help_text="The members of the body's `data` besides `button_guid`."
    )
    maps_to = serializers.CharField(
        allow_null=True, help_text="For a legacy name, the native event it maps to; null for a native name."
    )


class EventCatalogueDoc(serializers.Serializer):
    data = EventTypeDoc(many=True, help_text="Every subscribable event name.")


def _url_field(**kwargs):
    return StrictCharField(max_length=2048, **kwargs)


class SubscriptionCreateInput(InputSerializer):
    url = _url_field(help_text="The receiver's URL: `https://` only, never a private, loopback or link-local address.")
    events = serializers.ListField(
        child=StrictCharField(max_length=64),
        allow_empty=False,
        max_length=20,
        help_text="Event names to subscribe to: native names, or the 5 legacy names with `is_legacy_compat`.",
    )
    secret = StrictCharField(
        required=False,
        min_length=16,
        max_length=256,
        trim_whitespace=False,
        help_text="The signing secret, 16 to 256 characters; generated when omitted and returned once.",
    )
    is_legacy_compat = StrictBooleanField(
        required=False,
        default=False,
        help_text="True to take legacy names and receive the legacy envelope (default false).",
    )


class SubscriptionPatchInput(InputSerializer):
    url = _url_field(help_text="The receiver's URL: `https://` only, never a private, loopback or link-local address.")
    events = serializers.ListField(
        child=StrictCharField(max_length=64),
        allow_empty=False,
        max_length=20,
        help_text="Event names to subscribe to: native names, or the 5 legacy names with `is_legacy_compat`.",
    )
    is_active = StrictBooleanField(
        help_text="False deactivates the subscription: deliveries queued for it are dropped."
    )
    is_legacy_compat = StrictBooleanField(help_text="True to take legacy names and receive the legacy envelope.")
    secret = serializers.CharField(read_only=True, help_text="Not patchable: use rotate-secret.")


class RotateSecretInput(InputSerializer):
    secret = StrictCharField(
        required=False,
        min_length=16,
        max_length=256,
        trim_whitespace=False,
        help_text=(
            "The new signing secret, 16 to 256 characters; generated when omitted. The old one stops working at once."
        ),
    )


class RedeliverInput(InputSerializer):
    delivery_id = StrictUUIDField(help_text="A `delivery_id` from this subscription's delivery log.")


class DeliveryListQuery(InputSerializer):
    status = serializers.ChoiceField(
        choices=Delivery.Status.values, required=False, help_text="Only deliveries in this status."
    )
    event_type = serializers.ChoiceField(
        choices=list(NATIVE_NAMES), required=False, help_text="Only deliveries of this event."
    )
