"""Input serializers that refuse what they do not declare, strict string fields, the tenant-bound id
field, the rule for names and labels people read, and the one way views validate input
(`validate_input`)."""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Mapping
from urllib.parse import urlsplit

from rest_framework import serializers

from apps.core.errors import NotFound, ValidationFailed

# --- text that people read ----------------------------------------------------------------------------

# Unicode categories that draw nothing or change how the rest is drawn: controls (Cc), format
# characters (Cf: zero-width space and joiners, soft hyphen, word joiner, BOM, the bidirectional
# marks, embeddings, overrides and isolates, tag characters), surrogates (Cs), line and paragraph
# separators (Zl, Zp).
_INVISIBLE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
# Letters and marks of other categories that render as nothing: combining grapheme joiner, Khmer
# inherent vowels, Hangul fillers, Braille blank.
_BLANK_CHARACTERS = frozenset("\u034f\u17b4\u17b5\u115f\u1160\u3164\uffa0\u2800")


class InvisibleCharacter(ValueError):
    def __init__(self, char: str):
        super().__init__(f"U+{ord(char):04X}")
        self.code_point = f"U+{ord(char):04X}"


def normalize_label(value: str) -> str:
    """A name or tag as stored: Unicode NFC, so `café` and `cafe\u0301` are one value.
    InvisibleCharacter for zero-width, bidirectional-control and other invisible characters,
    which would make look-alike duplicates (product-decisions.md, "Text that people read")."""
    value = unicodedata.normalize("NFC", value)
    for char in value:
        if unicodedata.category(char) in _INVISIBLE_CATEGORIES or char in _BLANK_CHARACTERS:
            raise InvisibleCharacter(char)
    return value


class StrictStringMixin:
    """A JSON string: numbers and booleans are refused (422 "Must be a string.", code `not_string`)
    rather than turned into text, and a string longer than `max_length` is refused as sent (the
    schema's `maxLength`), before surrounding whitespace is trimmed. The one strict-string rule of
    every input field."""

    default_error_messages = {"not_string": "Must be a string."}

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("not_string")
        max_length = getattr(self, "max_length", None)
        if max_length is not None and len(data) > max_length:
            self.fail("max_length", max_length=max_length)
        return super().to_internal_value(data)


class StrictCharField(StrictStringMixin, serializers.CharField):
    pass


def validate_https_link(value: str) -> str:
    """A link people follow from a message (a keyboard button): an absolute https:// URL with a
    host, no user or password and no whitespace. A URL `urlsplit` cannot read (an unclosed `[`
    host, a port past 65535) is refused like any other, never a 500."""
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 (raises ValueError for a port that is not a port)
    except ValueError:
        raise serializers.ValidationError("Must be an absolute https:// URL.") from None
    if parts.scheme != "https" or not parts.hostname:
        raise serializers.ValidationError("Must be an absolute https:// URL.")
    if parts.username is not None or parts.password is not None:
        raise serializers.ValidationError("URLs with credentials are refused.")
    if any(ch.isspace() for ch in value):
        raise serializers.ValidationError("URLs may not contain whitespace.")
    return value


class StrictIntegerField(serializers.IntegerField):
    """A JSON integer only: no numeric string, no boolean, no float (422 "Must be an integer.")."""

    default_error_messages = {"invalid": "Must be an integer."}

    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, int):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictFloatField(serializers.FloatField):
    """A finite JSON number only: no numeric string, no boolean (422 "Must be a number.")."""

    default_error_messages = {"invalid": "Must be a number."}

    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, int | float) or not math.isfinite(data):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictBooleanField(serializers.BooleanField):
    """JSON true or false only: never "yes", "true", 1 or 0 (422 "Must be a boolean (true or false).")."""

    default_error_messages = {"invalid": "Must be a boolean (true or false)."}

    def to_internal_value(self, data):
        if isinstance(data, bool):
            return data
        self.fail("invalid")


class StrictEmailField(StrictStringMixin, serializers.EmailField):
    pass


class StrictRegexField(StrictStringMixin, serializers.RegexField):
    pass


class StrictUUIDField(StrictStringMixin, serializers.UUIDField):
    pass


class LabelMixin:
    """Mixed into every CharField that reads a name or tag (contact, visitor, account and legal
    entity names, department names, tags): the value is normalised by `normalize_label`, and an
    invisible or bidirectional-control character is 422 naming its code point."""

    default_error_messages = {
        "invisible": "Must not contain invisible or bidirectional control characters ({code_point}).",
    }

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        try:
            return normalize_label(value)
        except InvisibleCharacter as exc:
            self.fail("invisible", code_point=exc.code_point)


class LabelField(LabelMixin, StrictCharField):
    """A name or label: a JSON string (never a number turned into text), normalised by
    `normalize_label`."""


# --- uploads --------------------------------------------------------------------------------------------


class UploadField(serializers.FileField):
    """A multipart file part of a documentation serializer (`XMultipartDoc`) that names the media
    types the server takes; ScopedAutoSchema states them as the part's `encoding.contentType`."""

    def __init__(self, *, content_types: tuple[str, ...], **kwargs):
        self.content_types = tuple(content_types)
        super().__init__(**kwargs)


# --- strict inputs --------------------------------------------------------------------------------------


def _unstorable(text: str) -> str | None:
    """Why `text` cannot be stored (DRF's own messages for its string fields), or None."""
    if "\x00" in text:
        return "Null characters are not allowed."
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return f"Surrogate characters are not allowed: U+{ord(text[exc.start]):X}."
    return None


def unstorable_text(data, path: str = "") -> dict[str, list[str]]:
    """Errors, by dotted path under `path`, for every string of `data` (member names included,
    reported at their object's path) that holds NUL or a lone surrogate: PostgreSQL refuses NUL in
    text and JSON, and UTF-8 cannot encode a lone surrogate."""
    errors: dict[str, list[str]] = {}
    stack = [(path, data)]
    while stack:
        path, node = stack.pop()
        if isinstance(node, str):
            if problem := _unstorable(node):
                errors.setdefault(path or "body", []).append(problem)
        elif isinstance(node, Mapping):
            for key, value in node.items():
                name = str(key)
                if problem := _unstorable(name):
                    errors.setdefault(path or "body", []).append(problem)
                    continue
                stack.append((f"{path}.{name}" if path else name, value))
        elif isinstance(node, list | tuple):
            stack.extend((f"{path}.{index}" if path else str(index), item) for index, item in enumerate(node))
    return errors


def _free_form(field) -> bool:
    """A member whose strings no field of ours reads: a JSON value, an object, or a list of them."""
    if isinstance(field, serializers.ListField):
        return _free_form(field.child)
    return isinstance(field, serializers.JSONField | serializers.DictField)


class StrictInputMixin:
    """Unknown members -> 422 naming them; read-only members sent back -> 422 naming them; a body
    that is not a JSON object -> 422 at `body`; NUL or a lone surrogate anywhere in a free-form
    member (a JSON value or object: contact attributes, a ticket's context), names included -> 422
    at its path, before the field reads it (DRF's string fields refuse both with these messages;
    free-form text would otherwise fail in the database or the renderer). Nested serializers using
    the mixin report at their own dotted path."""

    def to_internal_value(self, data):
        if not isinstance(data, Mapping):
            raise serializers.ValidationError({"non_field_errors": ["Expected a JSON object."]})
        errors = {}
        for name in data:
            field = self.fields.get(name)
            if field is None:
                errors[name] = ["Unknown field."]
            elif field.read_only:
                errors[name] = ["Read-only field; it cannot be written."]
            elif _free_form(field):
                errors.update(unstorable_text(data[name], str(name)))
        if errors:
            raise serializers.ValidationError(errors)
        return super().to_internal_value(data)


class InputSerializer(StrictInputMixin, serializers.Serializer):
    """Base of every `XInput` serializer."""

    # True where validating no data at all gives no data (every field optional and without a
    # default, and `validate` adds nothing): `validate_input` then builds no serializer for an empty
    # input, a list's query with no filters (a measurable share of a list's time). A test runs
    # every such serializer on {} to hold each class to it.
    empty_is_valid = False


class TenantPrimaryKeyField(serializers.PrimaryKeyRelatedField):
    """Resolves an id inside the request's widget, never outside it.

    A foreign id and a missing id answer the same way: by default the route's 404 (`missing="404"`),
    or a 422 at the field's path (`missing="422"`) where the spec says so. The queryset is filtered
    on `tenant_field` (default `widget`) with the token's widget.
    """

    default_error_messages = {"does_not_exist": "Unknown id.", "incorrect_type": "Must be an integer id."}

    def __init__(self, *, tenant_field: str = "widget", missing: str = "404", **kwargs):
        self.tenant_field = tenant_field
        self.missing = missing
        super().__init__(**kwargs)

    def get_queryset(self):
        request = self.context["request"]
        widget = getattr(request, "widget", None)
        if widget is None:
            return super().get_queryset().none()
        return super().get_queryset().filter(**{self.tenant_field: widget})

    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, int):
            self.fail("incorrect_type", data_type=type(data).__name__)
        try:
            return self.get_queryset().get(pk=data)
        except self.get_queryset().model.DoesNotExist:
            if self.missing == "404":
                raise NotFound() from None
            self.fail("does_not_exist", pk_value=data)


def validate_input(serializer_class, data, *, context: dict | None = None, partial: bool = False, **kwargs) -> dict:
    """Validate `data` with an `XInput` serializer and return its validated data; errors raise the
    422 problem. The one way a view (REST, visitor API, compat) reads a body or a query."""
    if not data and not partial and not kwargs and getattr(serializer_class, "empty_is_valid", False):
        return {}
    serializer = serializer_class(data=data, context=context or {}, partial=partial, **kwargs)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data


def refuse_query(request) -> None:
    """422 naming each query parameter of an operation that takes none."""
    if request.query_params:
        raise ValidationFailed(errors={name: ["Unknown parameter."] for name in request.query_params})


def refuse_body(request) -> None:
    """422 for a body sent to an operation that takes none. An empty JSON object is no body: many
    clients send `{}` with every POST."""
    body = request.body.strip()
    empty_object = body.startswith(b"{") and body.endswith(b"}") and not body[1:-1].strip()
    if body and not empty_object:
        raise ValidationFailed(errors={"body": ["This operation takes no body."]})
