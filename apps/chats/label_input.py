"""The rules of the label writes, /v1/labels and PUT /v1/chats/{id}/labels: the REST API reads its
bodies with these serializers, and the console reads its forms through them (the settings page
through apps.chats.api.serializers, the chat's label picker through
`services.check_chat_label_names`), so every entry point refuses the same values with the same
messages."""

from __future__ import annotations

from rest_framework import serializers

from apps.core.api.serializers import InputSerializer, LabelField, StrictRegexField

MAX_LABELS_PER_CHAT = 20
NAME_MAX_CHARS = 50
NAME_HELP = (
    f"1 to {NAME_MAX_CHARS} characters, stored in NFC with surrounding whitespace removed; unique in the widget "
    "without regard to case (409 `label_taken`)."
)
COLOR_HELP = "`#rrggbb` (stored in lower case), or null for none."


def _not_blank(value: str) -> str:
    if not value.strip():
        raise serializers.ValidationError("Must contain a visible character.")
    return value


class LabelNameField(LabelField):
    def __init__(self, **kwargs):
        kwargs.setdefault("max_length", NAME_MAX_CHARS)
        kwargs.setdefault("validators", [_not_blank])
        super().__init__(**kwargs)


class ColorField(StrictRegexField):
    def __init__(self, **kwargs):
        super().__init__(r"^#[0-9A-Fa-f]{6}$", max_length=7, allow_null=True, help_text=COLOR_HELP, **kwargs)

    def to_internal_value(self, data):
        return super().to_internal_value(data).lower()


class LabelInput(InputSerializer):
    name = LabelNameField(help_text=NAME_HELP)
    color = ColorField(required=False)


class LabelPatchInput(LabelInput):
    """Any subset of the members; the others keep their values."""


class ChatLabelsInput(InputSerializer):
    labels = serializers.ListField(
        child=LabelNameField(),
        max_length=MAX_LABELS_PER_CHAT,
        help_text=f"Names of the widget's labels (any case), at most {MAX_LABELS_PER_CHAT}; replaces the chat's "
        "labels whole (`[]` takes every label off). A name the widget has no label for is 422.",
    )
