"""Query parameters of the chat and message lists, validated strictly (422, never a clamp)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from apps.core.api.query import MomentField
from apps.core.api.serializers import InputSerializer

from .. import selectors
from ..label_input import MAX_LABELS_PER_CHAT, LabelNameField
from ..models import Chat
from ..services.labels import clean_name, label_key


class WindowQuery(InputSerializer):
    from_ = MomentField(
        required=False,
        help_text="Date-time or date (Europe/Moscow unless an offset is given), from 1900-01-01 to 9999-01-01.",
    )
    to = MomentField(required=False, help_text="Date-time or date (a bare date is midnight; exclusive).")

    def get_fields(self):
        fields = super().get_fields()
        fields["from"] = fields.pop("from_")
        return fields

    def validate(self, attrs):
        if attrs.get("from") and attrs.get("to") and attrs["from"] > attrs["to"]:
            raise serializers.ValidationError({"to": ["Must not be earlier than `from`."]})
        return attrs


# The length is checked after surrounding whitespace is removed (the description says so); no
# pattern is documented, since a value with surrounding whitespace is accepted and trimmed.
@extend_schema_field({"type": "string", "minLength": 2, "maxLength": 100})
class SearchTextField(serializers.CharField):
    pass


class ChatListQuery(WindowQuery):
    empty_is_valid = True  # no parameters: every chat of the widget
    status = serializers.ChoiceField(
        choices=Chat.Status.values, required=False, help_text="Only chats in this state; without it, every state."
    )
    channel = serializers.RegexField(
        r"^[a-z0-9_]{1,64}$",
        max_length=64,
        required=False,
        help_text="Only chats of this channel: `widget`, `ch{id}` for a custom channel, or a messenger code.",
    )
    has_client_messages = serializers.ChoiceField(
        choices=["0", "1"], required=False, help_text="1 keeps chats where the visitor wrote."
    )
    q = SearchTextField(
        min_length=2,
        max_length=100,
        required=False,
        trim_whitespace=True,
        help_text="2 to 100 characters (surrounding whitespace is removed first), searched in visible message text.",
    )
    label = serializers.ListField(
        child=LabelNameField(),
        required=False,
        max_length=MAX_LABELS_PER_CHAT,
        help_text="A label name (any case); repeat the parameter to keep chats carrying every one of them. A name "
        "the widget has no label for is 422.",
    )

    def validate_label(self, names: list[str]) -> list[int]:
        """The names as the ids of the widget's labels (the selector filters by id)."""
        keys = {label_key(name) for name in names}
        found = selectors.get_labels_by_key(widget=self.context["request"].widget, keys=keys)
        unknown = [clean_name(name) for name in names if label_key(name) not in found]
        if unknown:
            raise serializers.ValidationError([f"This widget has no label named “{name}”." for name in unknown])
        return sorted({label.pk for label in found.values()})


class MessageListQuery(WindowQuery):
    empty_is_valid = True  # no parameters: every message of the chat
