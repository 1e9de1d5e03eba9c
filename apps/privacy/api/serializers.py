"""Inputs of the data protection routes; the owner's data pages in the console read their forms with
them too (one set of rules and messages)."""

from __future__ import annotations

from rest_framework import serializers

from apps.core.api.query import MomentField
from apps.core.api.serializers import InputSerializer, StrictCharField, StrictIntegerField

from ..models import RETENTION_MAX_DAYS, RETENTION_MIN_DAYS


class RetentionInput(InputSerializer):
    chats_days = StrictIntegerField(
        min_value=RETENTION_MIN_DAYS,
        max_value=RETENTION_MAX_DAYS,
        allow_null=True,
        help_text=(
            f"Days a chat is kept after its last message, {RETENTION_MIN_DAYS} to {RETENTION_MAX_DAYS}; null keeps "
            "chats for good."
        ),
    )


class AuditLogQuery(InputSerializer):
    empty_is_valid = True  # no parameters: every row of the widget
    action = StrictCharField(min_length=1, max_length=64, required=False, help_text="Only rows of this action.")
    from_ = MomentField(required=False, help_text="Date-time or date (Europe/Moscow unless an offset is given).")
    to = MomentField(required=False, help_text="Date-time or date (exclusive).")

    def get_fields(self):
        fields = super().get_fields()
        fields["from"] = fields.pop("from_")
        return fields

    def validate(self, attrs):
        if attrs.get("from") and attrs.get("to") and attrs["from"] > attrs["to"]:
            raise serializers.ValidationError({"to": ["Must not be earlier than `from`."]})
        return attrs
