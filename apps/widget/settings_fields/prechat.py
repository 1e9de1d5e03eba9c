"""The pre-chat form setting (`prechat`): when the form shows and the fields it asks for.

The visitor API checks a visitor's answers against the same declaration (`PRECHAT_TYPES`,
`CONTACT_KEYS`), so the shape written here is the shape the answers are read by."""

from __future__ import annotations

import copy
import re
from typing import Any

from ..settings_vocabulary import LANGUAGES, SINGLE_LINE_TEXT
from .base import CLEAR, INVALID, Context, Field, Invalid, _type_error, pcre
from .scalars import TextField

PRECHAT_WHEN = ("never", "always", "offline")
PRECHAT_TYPES = ("text", "email", "phone", "number", "select", "checkbox")
PRECHAT_MAX_FIELDS = 10
PRECHAT_MAX_OPTIONS = 50
KEY_BODY = r"[a-z0-9_]{1,40}"
_KEY = re.compile(KEY_BODY)
# These keys fill the contact's own fields, so each has the one type that field takes.
CONTACT_KEYS = {"name": "text", "email": "email", "phone": "phone"}
LABEL_MAX = 300
OPTION_VALUE_MAX = 100

_LABEL = TextField("label", group="behaviour", max_length=LABEL_MAX, description="A label in one language.")
_OPTION_VALUE = TextField(
    "value", group="behaviour", max_length=OPTION_VALUE_MAX, description="The value stored when chosen."
)


def _member_errors(value: dict, allowed: tuple[str, ...], path: str, errors: dict[str, list[str]]) -> bool:
    ok = True
    for name in value:
        if name not in allowed:
            errors.setdefault(f"{path}.{name}", []).append(f"Unknown member; one of {', '.join(allowed)}.")
            ok = False
    return ok


def _labels(value: Any, ctx: Context, path: str, errors: dict[str, list[str]]) -> dict | None:
    if not isinstance(value, dict):
        errors.setdefault(path, []).append(_type_error("object"))
        return None
    if not value:
        errors.setdefault(path, []).append("Must have a label in at least one language.")
        return None
    out, ok = {}, True
    for language, text in value.items():
        try:
            if language not in LANGUAGES:
                raise Invalid(f"Unknown language; one of {', '.join(LANGUAGES)}.")
            out[language] = _LABEL.check(text, ctx)
        except Invalid as exc:
            errors.setdefault(f"{path}.{language}", []).append(exc.message)
            ok = False
    return out if ok else None


def _options(value: Any, ctx: Context, path: str, errors: dict[str, list[str]]) -> list | None:
    if not isinstance(value, list):
        errors.setdefault(path, []).append(_type_error("array"))
        return None
    if not 1 <= len(value) <= PRECHAT_MAX_OPTIONS:
        errors.setdefault(path, []).append(f"Must have 1 to {PRECHAT_MAX_OPTIONS} options.")
        return None
    out, ok, seen = [], True, set()
    for index, option in enumerate(value):
        at = f"{path}.{index}"
        if not isinstance(option, dict):
            errors.setdefault(at, []).append(_type_error("object"))
            ok = False
            continue
        ok = _member_errors(option, ("value", "label_i18n"), at, errors) and ok
        parsed: dict[str, Any] = {}
        try:
            if "value" not in option:
                raise Invalid("Required.")
            parsed["value"] = _OPTION_VALUE.check(option["value"], ctx)
            if parsed["value"] in seen:
                raise Invalid("Duplicate value; each option's value is unique within the field.")
            seen.add(parsed["value"])
        except Invalid as exc:
            errors.setdefault(f"{at}.value", []).append(exc.message)
            ok = False
        if "label_i18n" not in option:
            errors.setdefault(f"{at}.label_i18n", []).append("Required.")
            ok = False
        else:
            labels = _labels(option["label_i18n"], ctx, f"{at}.label_i18n", errors)
            ok = ok and labels is not None
            parsed["label_i18n"] = labels
        out.append(parsed)
    return out if ok else None


def _form_field(value: Any, ctx: Context, path: str, errors: dict[str, list[str]], seen: set[str]) -> dict | None:
    if not isinstance(value, dict):
        errors.setdefault(path, []).append(_type_error("object"))
        return None
    ok = _member_errors(value, ("key", "type", "label_i18n", "required", "options"), path, errors)
    out: dict[str, Any] = {}
    for name in ("key", "type", "label_i18n"):
        if name not in value:
            errors.setdefault(f"{path}.{name}", []).append("Required.")
            ok = False
    key, kind = value.get("key"), value.get("type")
    if "key" in value:
        if not isinstance(key, str):
            errors.setdefault(f"{path}.key", []).append(_type_error("string"))
            ok = False
        elif not _KEY.fullmatch(key):
            errors.setdefault(f"{path}.key", []).append(
                "1 to 40 characters: lowercase Latin letters, digits and underscores."
            )
            ok = False
        elif key in seen:
            errors.setdefault(f"{path}.key", []).append("Duplicate key; each field's key is unique within the form.")
            ok = False
        else:
            seen.add(key)
            out["key"] = key
    if "type" in value:
        if kind not in PRECHAT_TYPES:
            errors.setdefault(f"{path}.type", []).append(f"One of {', '.join(PRECHAT_TYPES)}.")
            ok = False
        elif out.get("key") in CONTACT_KEYS and kind != CONTACT_KEYS[out["key"]]:
            errors.setdefault(f"{path}.type", []).append(
                f"The key {out['key']} fills the contact's {out['key']}: its type is {CONTACT_KEYS[out['key']]}."
            )
            ok = False
    out["type"] = kind
    if "label_i18n" in value:
        labels = _labels(value["label_i18n"], ctx, f"{path}.label_i18n", errors)
        ok = ok and labels is not None
        out["label_i18n"] = labels
    required = value.get("required", False)
    if not isinstance(required, bool):
        errors.setdefault(f"{path}.required", []).append(_type_error("boolean"))
        ok = False
    out["required"] = required
    if kind == "select":
        if "options" not in value:
            errors.setdefault(f"{path}.options", []).append("Required for a select field.")
            ok = False
        else:
            options = _options(value["options"], ctx, f"{path}.options", errors)
            ok = ok and options is not None
            out["options"] = options
    elif "options" in value and kind in PRECHAT_TYPES:
        errors.setdefault(f"{path}.options", []).append("Only a select field has options.")
        ok = False
    return out if ok else None


class PrechatField(Field):
    """`{when, fields}`: the pre-chat form, replaced whole; null brings back the default (no form)."""

    kind = "prechat_form"
    json_type = "object"
    patch = "replace_whole"

    def __init__(self, name: str, **kwargs) -> None:
        kwargs.setdefault("semantics", "render_default")
        super().__init__(name, default={"when": "never", "fields": []}, **kwargs)

    def parse(self, value: Any, ctx: Context, path: str, errors: dict[str, list[str]]) -> Any:
        if value is None:
            return CLEAR
        if not isinstance(value, dict):
            errors.setdefault(path, []).append(_type_error("object"))
            return INVALID
        ok = _member_errors(value, ("when", "fields"), path, errors)
        when = value.get("when")
        if when not in PRECHAT_WHEN:
            errors.setdefault(f"{path}.when", []).append(
                "Required." if "when" not in value else f"One of {', '.join(PRECHAT_WHEN)}."
            )
            ok = False
        fields = value.get("fields", [])
        parsed: list[dict] = []
        if not isinstance(fields, list):
            errors.setdefault(f"{path}.fields", []).append(_type_error("array"))
            ok = False
        elif len(fields) > PRECHAT_MAX_FIELDS:
            errors.setdefault(f"{path}.fields", []).append(f"At most {PRECHAT_MAX_FIELDS} fields.")
            ok = False
        else:
            if not fields and when in ("always", "offline"):
                errors.setdefault(f"{path}.fields", []).append(
                    "A form that shows needs at least one field; add one or set when to never."
                )
                ok = False
            seen: set[str] = set()
            for index, item in enumerate(fields):
                field = _form_field(item, ctx, f"{path}.fields.{index}", errors, seen)
                ok = ok and field is not None
                parsed.append(field)
        if not ok:
            return INVALID
        return {"when": when, "fields": parsed}

    def check(self, value: Any, ctx: Context) -> Any:
        errors: dict[str, list[str]] = {}
        parsed = self.parse(value, ctx, self.name, errors)
        if parsed is INVALID:
            raise Invalid("; ".join(f"{path}: {' '.join(msgs)}" for path, msgs in errors.items()))
        return parsed

    def rules(self, ctx: Context) -> list[str]:
        return [
            "JSON object `{when, fields}`; replaced whole; null brings back the default (no form).",
            f"`when`: one of {', '.join(PRECHAT_WHEN)} (`always`: before the first message; `offline`: before the "
            "first message while nobody answers; `never`: no form).",
            f"`fields`: at most {PRECHAT_MAX_FIELDS}, in display order; at least one unless `when` is `never`.",
            f"A field: `key` ({KEY_BODY}, unique within the form), `type` (one of {', '.join(PRECHAT_TYPES)}), "
            f"`label_i18n` (`{{language: text}}`, at least one of {', '.join(LANGUAGES)}, each 1 to {LABEL_MAX} "
            "characters), `required` (boolean, default false), `options` (only and always for `select`: "
            f"1 to {PRECHAT_MAX_OPTIONS} of `{{value, label_i18n}}`, values unique, "
            f"1 to {OPTION_VALUE_MAX} characters).",
            "Keys `name`, `email`, `phone` fill the contact's fields and take the types text, email and phone; "
            "other keys are stored as the contact's attributes. A required `checkbox` is a consent.",
            "Errors are keyed by dotted path, e.g. `prechat.fields.2.key`.",
        ]

    def structure(self, ctx: Context) -> dict[str, Any]:
        labels = {
            "strict_json_type": "object",
            "keys": {"strict_json_type": "string", "enum": list(LANGUAGES)},
            "values": {
                "strict_json_type": "string",
                "min_length": 1,
                "max_length": LABEL_MAX,
                "pattern": pcre(SINGLE_LINE_TEXT),
            },
            "min_properties": 1,
        }
        option = {
            "strict_json_type": "object",
            "properties": {
                "value": {
                    "strict_json_type": "string",
                    "min_length": 1,
                    "max_length": OPTION_VALUE_MAX,
                    "pattern": pcre(SINGLE_LINE_TEXT),
                },
                "label_i18n": labels,
            },
            "required": ["value", "label_i18n"],
        }
        field = {
            "strict_json_type": "object",
            "properties": {
                "key": {"strict_json_type": "string", "pattern": pcre(KEY_BODY), "unique": True},
                "type": {"strict_json_type": "string", "enum": list(PRECHAT_TYPES)},
                "label_i18n": labels,
                "required": {"strict_json_type": "boolean", "default": False},
                "options": {
                    "strict_json_type": "array",
                    "min_items": 1,
                    "max_items": PRECHAT_MAX_OPTIONS,
                    "items": option,
                    "only_for_type": "select",
                },
            },
            "required": ["key", "type", "label_i18n"],
            "contact_keys": dict(CONTACT_KEYS),
        }
        return {
            "properties": {
                "when": {"strict_json_type": "string", "enum": list(PRECHAT_WHEN)},
                "fields": {
                    "strict_json_type": "array",
                    "min_items": 0,
                    "max_items": PRECHAT_MAX_FIELDS,
                    "items": field,
                },
            }
        }

    def openapi_value(self) -> dict[str, Any]:
        def labels(what: str) -> dict[str, Any]:
            return {
                "type": "object",
                "propertyNames": {"enum": list(LANGUAGES)},
                "additionalProperties": {"type": "string", "minLength": 1, "maxLength": LABEL_MAX},
                "minProperties": 1,
                "description": f"{what} by language; at least one.",
            }

        option = {
            "type": "object",
            "required": ["value", "label_i18n"],
            "additionalProperties": False,
            "properties": {
                "value": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": OPTION_VALUE_MAX,
                    "description": "What is stored when the visitor picks this option; unique within the field.",
                },
                "label_i18n": labels("The option's label"),
            },
        }
        field = {
            "type": "object",
            "required": ["key", "type", "label_i18n"],
            "additionalProperties": False,
            "properties": {
                "key": {
                    "type": "string",
                    "pattern": f"^{KEY_BODY}$",
                    "description": "Unique within the form; `name`, `email`, `phone` fill the contact's fields, "
                    "other keys its attributes.",
                },
                "type": {"type": "string", "enum": list(PRECHAT_TYPES), "description": "The kind of answer."},
                "label_i18n": labels("The field's label"),
                "required": {
                    "type": "boolean",
                    "default": False,
                    "description": "The visitor must answer; a required checkbox is a consent (must be true).",
                },
                "options": {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": PRECHAT_MAX_OPTIONS,
                    "items": option,
                    "description": "The choices of a `select` field (only there, and required there).",
                },
            },
        }
        return {
            "type": "object",
            "required": ["when"],
            "additionalProperties": False,
            "properties": {
                "when": {
                    "type": "string",
                    "enum": list(PRECHAT_WHEN),
                    "description": "`always`: before the first message; `offline`: the same while nobody answers; "
                    "`never`: no form.",
                },
                "fields": {
                    "type": "array",
                    "maxItems": PRECHAT_MAX_FIELDS,
                    "items": field,
                    "description": "The questions in display order.",
                },
            },
        }

    def default_for(self, generation: str) -> Any:
        return copy.deepcopy(self.default)
