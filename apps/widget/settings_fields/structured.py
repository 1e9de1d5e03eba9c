"""The field kinds of nested values: device profiles, the translation matrix and per-language texts, with
the one parse of a map of maps they share."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable
from typing import Any

from ..settings_vocabulary import DEVICES, LANGUAGES, TRANSLATABLE
from .base import CLEAR, INVALID, Context, Field, Invalid, _nullable, _type_error
from .scalars import BooleanField


def _parse_nested(
    value: Any,
    ctx: Context,
    path: str,
    errors: dict[str, list[str]],
    *,
    keys: Iterable[str],
    unknown_key: str,
    leaves: dict[str, Field],
    unknown_leaf: str,
    nullable: bool,
    empty: str | None = None,
) -> Any:
    """The one parse of a JSON object of JSON objects (`{key: {leaf: value}}`, each leaf checked by its
    field): the canonical map, CLEAR for a null root, or INVALID with every error keyed by dotted path.
    `nullable`: a null entry or leaf is CLEAR (else it is checked like any other value); `empty`: the
    error of an entry with no leaf (None: an empty entry is kept)."""
    if value is None:
        return CLEAR
    if not isinstance(value, dict):
        errors.setdefault(path, []).append(_type_error("object"))
        return INVALID
    out: dict[str, Any] = {}
    ok = True
    for key, entry in value.items():
        key_path = f"{path}.{key}"
        if key not in keys:
            problem = unknown_key
        elif entry is None and nullable:
            out[key] = CLEAR
            continue
        elif not isinstance(entry, dict):
            problem = _type_error("object")
        elif not entry and empty is not None:
            problem = empty
        else:
            problem = None
        if problem is not None:
            errors.setdefault(key_path, []).append(problem)
            ok = False
            continue
        parsed: dict[str, Any] = {}
        for leaf_name, leaf_value in entry.items():
            leaf_path = f"{key_path}.{leaf_name}"
            leaf = leaves.get(leaf_name)
            if leaf is None:
                errors.setdefault(leaf_path, []).append(unknown_leaf)
                ok = False
                continue
            if leaf_value is None and nullable:
                parsed[leaf_name] = CLEAR
                continue
            try:
                parsed[leaf_name] = leaf.check(leaf_value, ctx)
            except Invalid as exc:
                errors.setdefault(leaf_path, []).append(exc.message)
                ok = False
        out[key] = parsed
    return out if ok else INVALID


class DeviceProfilesField(Field):
    """Sparse per-device overrides of the `profile_overridable` fields, merged deeply on PATCH."""

    kind = "device_profiles"
    json_type = "object"
    patch = "deep_merge"

    def __init__(self, name: str, *, leaves: Callable[[], list[Field]], **kwargs) -> None:
        kwargs.setdefault("semantics", "empty")
        super().__init__(name, default={}, **kwargs)
        self._leaves = leaves

    def leaves(self) -> dict[str, Field]:
        enabled = BooleanField(
            "enabled",
            group=self.group,
            description="false keeps the profile's data but renders this device with the base settings "
            "(the behaviour before device profiles); absent means true.",
            default=True,
        )
        return {"enabled": enabled, **{f.name: f for f in self._leaves()}}

    def rules(self, ctx: Context) -> list[str]:
        return [
            "JSON object with optional members " + ", ".join(DEVICES) + "; each a JSON object of overrides.",
            "Merged deeply: an omitted device or leaf keeps its stored value; a leaf null removes that override; "
            "a device null removes that profile; a root null removes every profile.",
            "`enabled: false` keeps the profile's data but renders the device with the base settings "
            "(legacy behaviour); absent `enabled` means true.",
            "Each override follows the rules of the top-level field of the same name (see `properties`).",
            "Errors are keyed by dotted path, e.g. `device_profiles.mobile.widget_offset_x`.",
        ]

    def structure(self, ctx: Context) -> dict[str, Any]:
        profile: dict[str, Any] = {
            "strict_json_type": "object",
            "accepted_types": ["object", "null"],
            "properties": {},
        }
        for name, leaf in self.leaves().items():
            described = leaf.describe(ctx)
            described["accepted_types"] = [t for t in described["accepted_types"] if t != "null"] + ["null"]
            described["nullable"] = True
            if name != "enabled":
                described["effective_default"] = None
                described["default_semantics"] = "inherit"
            profile["properties"][name] = described
        return {"properties": {device: copy.deepcopy(profile) for device in DEVICES}}

    def parse(self, value: Any, ctx: Context, path: str, errors: dict[str, list[str]]) -> Any:
        leaves = self.leaves()
        return _parse_nested(
            value,
            ctx,
            path,
            errors,
            keys=DEVICES,
            unknown_key=f"Unknown device; one of {', '.join(DEVICES)}.",
            leaves=leaves,
            unknown_leaf="Not overridable per device; overridable: " + ", ".join(leaves) + ".",
            nullable=True,
        )

    @staticmethod
    def merge(stored: dict | None, delta: Any) -> Any:
        if delta is CLEAR:
            return CLEAR
        result = copy.deepcopy(stored or {})
        for device, changes in delta.items():
            if changes is CLEAR:
                result.pop(device, None)
                continue
            profile = result.get(device, {})
            for leaf, leaf_value in changes.items():
                if leaf_value is CLEAR:
                    profile.pop(leaf, None)
                else:
                    profile[leaf] = leaf_value
            if profile:
                result[device] = profile
            else:
                result.pop(device, None)
        return result or CLEAR

    def openapi_value(self) -> dict[str, Any]:
        return self._openapi_object(write=False)

    def _openapi_object(self, *, write: bool) -> dict[str, Any]:
        props = {}
        for name, leaf in self.leaves().items():
            schema = leaf.openapi_value()
            if write:
                schema = _nullable(schema)
            schema["description"] = leaf.description
            props[name] = schema
        profile = {"type": "object", "properties": props, "additionalProperties": False}
        devices = {
            d: {**(_nullable(profile) if write else profile), "description": f"Sparse overrides for {d}."}
            for d in DEVICES
        }
        return {"type": "object", "properties": devices, "additionalProperties": False}

    def openapi(self, *, write: bool) -> dict[str, Any]:
        schema = self._openapi_object(write=write)
        if write:
            schema = _nullable(schema)
        schema["description"] = self.description
        return schema


class TranslationsField(Field):
    """Manual translations of the three translatable texts, keyed by enabled locale; replaced whole."""

    kind = "translation_matrix"
    json_type = "object"
    patch = "replace_whole"

    def __init__(self, name: str, *, texts: Callable[[], list[Field]], **kwargs) -> None:
        kwargs.setdefault("semantics", "empty")
        super().__init__(name, default={}, **kwargs)
        self._texts = texts

    def texts(self) -> dict[str, Field]:
        return {f.name: f for f in self._texts()}

    def rules(self, ctx: Context) -> list[str]:
        return [
            "JSON object keyed by locale; each key must be an enabled locale (one of `widget_supported_languages`, "
            "listed in `keys.accepted_values`).",
            "Each value is a JSON object with at least one of " + ", ".join(TRANSLATABLE) + "; each text follows "
            "the rules of the field of the same name (see `values.properties`).",
            "Replaces the whole matrix; an empty object or null clears it.",
            "Disabling a locale that still has translations is refused at `widget_supported_languages`.",
            "Errors are keyed by dotted path, e.g. `widget_text_translations.en.widget_name`.",
        ]

    def structure(self, ctx: Context) -> dict[str, Any]:
        properties = {}
        for name, text in self.texts().items():
            described = text.describe(ctx)
            described["accepted_types"] = ["string"]
            described["nullable"] = False
            described["effective_default"] = None
            described["default_semantics"] = "omit"
            properties[name] = described
        return {
            "keys": {
                "strict_json_type": "string",
                "enum": list(LANGUAGES),
                "accepted_values": list(ctx.enabled_locales),
            },
            "values": {"strict_json_type": "object", "min_properties": 1, "properties": properties},
        }

    def parse(self, value: Any, ctx: Context, path: str, errors: dict[str, list[str]]) -> Any:
        parsed = _parse_nested(
            value,
            ctx,
            path,
            errors,
            keys=LANGUAGES,
            unknown_key=f"Unknown locale; one of {', '.join(LANGUAGES)}.",
            leaves=self.texts(),
            unknown_leaf="Not translatable; one of " + ", ".join(TRANSLATABLE) + ".",
            nullable=False,
            empty="Must name at least one of " + ", ".join(TRANSLATABLE) + ".",
        )
        return CLEAR if parsed == {} else parsed

    def openapi_value(self) -> dict[str, Any]:
        props = {}
        for name, text in self.texts().items():
            schema = text.openapi_value()
            schema["description"] = text.description
            props[name] = schema
        entry = {"type": "object", "properties": props, "additionalProperties": False, "minProperties": 1}
        return {"type": "object", "propertyNames": {"enum": list(LANGUAGES)}, "additionalProperties": entry}

    def openapi(self, *, write: bool) -> dict[str, Any]:
        schema = self.openapi_value()
        if write:
            schema = _nullable(schema)
        schema["description"] = self.description
        return schema


class LanguageTextsField(Field):
    """One text per language (`{lang: text}`, any of the seven languages, not only the enabled
    ones); each text follows `text`'s rules. Replaced whole."""

    kind = "language_texts"
    json_type = "object"
    patch = "replace_whole"

    def __init__(self, name: str, *, text: Field, **kwargs) -> None:
        kwargs.setdefault("semantics", "empty")
        super().__init__(name, default={}, **kwargs)
        self.text = text

    def rules(self, ctx: Context) -> list[str]:
        return [
            f"JSON object keyed by language, one of {', '.join(LANGUAGES)}; each value a text of "
            f"{self.text.min_length} to {self.text.max_length} characters with a visible character.",
            "Replaces the whole map; an empty object or null clears it.",
            f"Errors are keyed by dotted path, e.g. `{self.name}.en`.",
        ]

    def structure(self, ctx: Context) -> dict[str, Any]:
        value = self.text.describe(ctx)
        value.update(accepted_types=["string"], nullable=False, effective_default=None, default_semantics="omit")
        return {"keys": {"strict_json_type": "string", "enum": list(LANGUAGES)}, "values": value}

    def parse(self, value: Any, ctx: Context, path: str, errors: dict[str, list[str]]) -> Any:
        if value is None:
            return CLEAR
        if not isinstance(value, dict):
            errors.setdefault(path, []).append(_type_error("object"))
            return INVALID
        out, ok = {}, True
        for language, text in value.items():
            try:
                if language not in LANGUAGES:
                    raise Invalid(f"Unknown language; one of {', '.join(LANGUAGES)}.")
                out[language] = self.text.check(text, ctx)
            except Invalid as exc:
                errors.setdefault(f"{path}.{language}", []).append(exc.message)
                ok = False
        return (out or CLEAR) if ok else INVALID

    def openapi_value(self) -> dict[str, Any]:
        return {
            "type": "object",
            "propertyNames": {"enum": list(LANGUAGES)},
            "additionalProperties": self.text.openapi_value(),
        }
