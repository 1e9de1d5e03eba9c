"""Query parameters of the chat and message lists, validated strictly (422, never a clamp)."""

from __future__ import annotations

from rest_framework import serializers

from apps.core.api.query import MomentField
from apps.core.api.serializers import InputSerializer

from ..models import Chat


class WindowQuery(InputSerializer):
    from_ = MomentField(required=False)
    to = MomentField(required=False)

    def get_fields(self):
        fields = super().get_fields()
        fields["from"] = fields.pop("from_")
        return fields

    def validate(self, attrs):
        if attrs.get("from") and attrs.get("to") and attrs["from"] > attrs["to"]:
            raise serializers.ValidationError({"to": ["Must not be earlier than `from`."]})
        return attrs


class ChatListQuery(WindowQuery):
    status = serializers.ChoiceField(choices=Chat.Status.values, required=False)
    channel = serializers.RegexField(r"^[a-z0-9_]{1,64}$", required=False)
    has_client_messages = serializers.ChoiceField(choices=["0", "1"], required=False)
    q = serializers.CharField(min_length=2, max_length=100, required=False, trim_whitespace=True)


class MessageListQuery(WindowQuery):
    pass
