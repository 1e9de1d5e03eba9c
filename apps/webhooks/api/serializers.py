from __future__ import annotations

from rest_framework import serializers

from apps.core.api.serializers import InputSerializer

from ..catalogue import NATIVE_NAMES
from ..models import Delivery


class SubscriptionDoc(serializers.Serializer):
    id = serializers.IntegerField()
    url = serializers.CharField()
    events = serializers.ListField(child=serializers.CharField())
    is_active = serializers.BooleanField()
    is_legacy_compat = serializers.BooleanField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class SubscriptionCreatedDoc(SubscriptionDoc):
    secret = serializers.CharField(help_text="Shown once; never readable again.")


class SecretDoc(serializers.Serializer):
    id = serializers.IntegerField()
    secret = serializers.CharField(help_text="The new secret, shown once; the old one stops working now.")


class DeliveryDoc(serializers.Serializer):
    delivery_id = serializers.UUIDField()
    status = serializers.ChoiceField(choices=Delivery.Status.values)
    event_type = serializers.CharField()
    payload = serializers.JSONField(help_text="What was sent, without button_id, personal data masked as [скрыто].")
    is_redeliverable = serializers.BooleanField()
    attempts = serializers.IntegerField()
    created_at = serializers.DateTimeField()


class RedeliveryDoc(serializers.Serializer):
    delivery_id = serializers.UUIDField(help_text="The new delivery (new X-Service-Delivery).")
    envelope = serializers.ChoiceField(choices=Delivery.Envelope.values)


class EventTypeDoc(serializers.Serializer):
    name = serializers.CharField()
    vocabulary = serializers.ChoiceField(choices=["native", "legacy"])
    enabled = serializers.BooleanField()
    status = serializers.ChoiceField(choices=["Live", "Wired"])
    triggered_by = serializers.CharField()
    data_fields = serializers.ListField(child=serializers.CharField())
    maps_to = serializers.CharField(allow_null=True)


class EventCatalogueDoc(serializers.Serializer):
    data = EventTypeDoc(many=True)


def _url_field():
    return serializers.CharField(max_length=2048)


class SubscriptionCreateInput(InputSerializer):
    url = _url_field()
    events = serializers.ListField(child=serializers.CharField(max_length=64), allow_empty=False, max_length=20)
    secret = serializers.CharField(required=False, min_length=16, max_length=256, trim_whitespace=False)
    is_legacy_compat = serializers.BooleanField(required=False, default=False)


class SubscriptionPatchInput(InputSerializer):
    url = _url_field()
    events = serializers.ListField(child=serializers.CharField(max_length=64), allow_empty=False, max_length=20)
    is_active = serializers.BooleanField()
    is_legacy_compat = serializers.BooleanField()
    secret = serializers.CharField(read_only=True, help_text="Not patchable: use rotate-secret.")


class RotateSecretInput(InputSerializer):
    secret = serializers.CharField(required=False, min_length=16, max_length=256, trim_whitespace=False)


class RedeliverInput(InputSerializer):
    delivery_id = serializers.UUIDField()


class DeliveryListQuery(InputSerializer):
    status = serializers.ChoiceField(choices=Delivery.Status.values, required=False)
    event_type = serializers.ChoiceField(choices=list(NATIVE_NAMES), required=False)
