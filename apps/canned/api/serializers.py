"""Inputs and documented shapes of the canned-response routes."""

from __future__ import annotations

from rest_framework import serializers

from apps.core.api.query import IdQueryField
from apps.core.api.serializers import InputSerializer, LabelField, StrictCharField, StrictRegexField

from ..models import LANGUAGES, SHORTCUT_PATTERN, TEXT_MAX
from ..variables import NAMES

TEXT_HELP = (
    "1 to 4000 characters. Variables: " + ", ".join(f"`{{{{{n}}}}}`" for n in NAMES) + ", each with an optional "
    "fallback (`{{contact.name|there}}`); names are case-sensitive and any other `{{...}}` is 422 "
    "`unknown_variable`."
)


def _not_blank(value: str) -> None:
    if not value.strip():
        raise serializers.ValidationError("Must contain a visible character.")


class CannedResponseDoc(serializers.Serializer):
    id = serializers.IntegerField(help_text="The canned response's id.")
    shortcut = serializers.CharField(help_text="1 to 32 of `a-z`, `0-9`, `_`, `-`; unique in the widget.")
    title = serializers.CharField(help_text="The canned response's title.")
    text = serializers.CharField(help_text="As written, variables included (`/render` fills them in).")
    language = serializers.ChoiceField(choices=LANGUAGES, allow_null=True, help_text="null: any language.")
    created_at = serializers.DateTimeField(help_text="When it was created.")
    updated_at = serializers.DateTimeField(help_text="When it last changed.")


class CannedResponseInput(InputSerializer):
    shortcut = StrictRegexField(
        rf"^{SHORTCUT_PATTERN}$",
        max_length=32,
        help_text="1 to 32 of `a-z`, `0-9`, `_`, `-`; unique in the widget (409 `shortcut_taken`).",
    )
    title = LabelField(
        max_length=100,
        validators=[_not_blank],
        help_text="1 to 100 characters, stored in NFC; invisible and bidirectional-control characters are refused.",
    )
    text = StrictCharField(max_length=TEXT_MAX, trim_whitespace=False, validators=[_not_blank], help_text=TEXT_HELP)
    language = serializers.ChoiceField(
        choices=LANGUAGES, allow_null=True, required=False, default=None, help_text="One of the seven or null (any)."
    )


class CannedResponsePatchInput(CannedResponseInput):
    """Any subset of the members; the others keep their values."""


class CannedListQuery(InputSerializer):
    empty_is_valid = True
    q = StrictCharField(
        required=False,
        max_length=100,
        help_text="1 to 100 characters (surrounding whitespace removed), found in shortcut, title or text (any case).",
    )
    language = serializers.ChoiceField(
        choices=LANGUAGES, required=False, help_text="Rows of this language and rows for any language (null)."
    )


class RenderQuery(InputSerializer):
    chat_id = IdQueryField(help_text="The chat to render for; another widget's chat is 404 like a missing one.")


class RenderDoc(serializers.Serializer):
    text = serializers.CharField(help_text="The text with every variable filled in (value, else fallback, else empty).")
