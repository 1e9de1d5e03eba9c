"""The rules of a contact's writes, PATCH /v1/contacts/{id} and POST /v1/contacts/{id}/tags: the
REST API reads its bodies with these serializers, and the operator console reads its contact form
through `services.check_contact_changes` and `services.check_tag_names`, so both refuse the same
values with the same messages."""

from __future__ import annotations

import json
import re

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.fields import empty

from apps.core.api.serializers import InputSerializer, LabelMixin, StrictCharField, StrictEmailField

ATTRIBUTES_MAX_BYTES = 16 * 1024
TAGS_PER_REQUEST = 50
PHONE_PATTERN = r"^\+?[0-9][0-9 ()\-]{0,31}$"
PHONE_RE = re.compile(PHONE_PATTERN[1:-1])  # used with fullmatch: `$` would admit a trailing newline
# As documented: the empty string (clears the phone) or a number.
PHONE_PATTERN_DOC = r"^(?:\+?[0-9][0-9 ()\-]{0,31})?$"


def attributes_size(attributes: dict) -> int:
    """Bytes of the attributes object as stored (compact UTF-8 JSON)."""
    return len(json.dumps(attributes, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


class StrictTextField(StrictCharField):
    """A string, never a number coerced to one. Length limits apply to what was sent (as the
    OpenAPI document states them); surrounding whitespace is removed afterwards."""

    def __init__(self, **kwargs):
        kwargs["trim_whitespace"] = False
        super().__init__(**kwargs)

    def run_validation(self, data=empty):
        value = super().run_validation(data)
        return value.strip() if isinstance(value, str) else value


class NameTextField(LabelMixin, StrictTextField):
    """A contact's name: NFC, no invisible or bidirectional-control characters."""


@extend_schema_field({"type": "object", "additionalProperties": True})
class AttributesField(serializers.JSONField):
    default_error_messages = {
        "not_object": 'Must be a JSON object; send {{"key": null}} to remove a key.',
        "too_large": f"Must serialize to at most {ATTRIBUTES_MAX_BYTES} bytes.",
    }

    def to_internal_value(self, data):
        data = super().to_internal_value(data)
        if not isinstance(data, dict):
            self.fail("not_object")
        if attributes_size(data) > ATTRIBUTES_MAX_BYTES:
            self.fail("too_large")
        return data


@extend_schema_field({"type": "string", "pattern": PHONE_PATTERN_DOC, "maxLength": 32})
class PhoneField(serializers.Field):
    """A phone number, or "" to clear it. Not a CharField: its blank rule would document a second,
    overlapping alternative; the documented pattern already admits ""."""

    default_error_messages = {
        "not_string": "Must be a string.",
        "invalid": "Digits, spaces, parentheses and dashes, optionally led by +; at most 32.",
    }

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("not_string")
        if data == "":
            return ""
        if not PHONE_RE.fullmatch(data):
            self.fail("invalid")
        return data.strip()

    def to_representation(self, value):
        return value


class ContactPatchInput(InputSerializer):
    """Only the members sent change; null (or "") clears name, email and phone."""

    name = NameTextField(
        required=False,
        allow_null=True,
        allow_blank=True,
        max_length=255,
        help_text="The contact's name; null or empty clears it.",
    )
    email = StrictEmailField(
        required=False,
        allow_null=True,
        allow_blank=True,
        max_length=255,
        help_text="The contact's e-mail address; null or empty clears it.",
    )
    phone = PhoneField(
        required=False, allow_null=True, help_text="The contact's phone number; null or empty clears it."
    )
    attributes = AttributesField(
        required=False,
        help_text="Merged key by key into the stored attributes; a null value removes that key.",
    )


class TagNameField(LabelMixin, StrictTextField):
    """A tag name, NFC: two names that differ only in normalisation are one tag."""

    default_error_messages = {"control": "Must not contain control characters."}

    def __init__(self, **kwargs):
        super().__init__(min_length=1, max_length=64, **kwargs)

    def run_validation(self, data=empty):
        value = super().run_validation(data)
        if not value:
            self.fail("blank")
        if any(ord(ch) < 0x20 or 0x7F <= ord(ch) < 0xA0 for ch in value):
            self.fail("control")
        return value


class TagsInput(InputSerializer):
    """Tag names to attach: 1 to 50 names of 1 to 64 characters (trimmed); duplicates are no-ops."""

    tags = serializers.ListField(
        child=TagNameField(),
        allow_empty=False,
        max_length=TAGS_PER_REQUEST,
        help_text="Tag names to attach, 1 to 50; an existing tag is a no-op.",
    )


class ContactMergeInput(InputSerializer):
    """POST /v1/contacts/{id}/merge: the contact the path's contact merges into."""

    into = StrictCharField(
        min_length=32,
        max_length=32,
        help_text="The guid of the contact that remains (the target); an unknown, foreign or erased one is 404.",
    )
