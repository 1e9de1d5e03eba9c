"""The field framework of widget settings: the field kinds (strict JSON types, constraints, render
defaults for legacy and new widgets, PATCH semantics, nullability, read-only), the validation
context and the sentinels. The fields themselves are declared once in settings_schema."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from .settings_vocabulary import (
    COLOR,
    CUSTOM_ICON_BODY,
    DEVICES,
    GENERATIONS,
    HTTPS_URL,
    ICON_PRESET_IDS,
    LANGUAGES,
    MULTI_LINE_TEXT,
    SINGLE_LINE_TEXT,
    SKINS,
    TRANSLATABLE,
)


class _Sentinel:
    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


CLEAR = _Sentinel("CLEAR")  # an explicit null: remove the stored key
INVALID = _Sentinel("INVALID")
_SAME = _Sentinel("SAME")


class Invalid(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class Context:
    """What validation and the schema need to know about one widget."""

    generation: str = "new"
    available_skins: frozenset[str] = frozenset(s.id for s in SKINS if not s.premium)
    # Effective `widget_supported_languages` now (the keys the translation matrix may use).
    enabled_locales: tuple[str, ...] = ("ru", "en")
    icon_exists: Callable[[int], bool] = field(default=lambda file_id: False, compare=False)


def pcre(body: str) -> str:
    return "/\\A(?:" + body.replace("/", "\\/") + ")\\z/u"


def _json_name(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _type_error(json_type: str) -> str:
    article = "an" if json_type[0] in "aeiou" else "a"
    return f"Must be {article} JSON {json_type}; other types are never coerced."


def _check_unicode(value: str) -> None:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise Invalid("Must be valid Unicode text (no lone surrogates).") from None


# --- field kinds --------------------------------------------------------------------------------------


class Field:
    """Base of every settings field. Subclasses set `kind`, `json_type` and implement `check`."""

    kind = "value"
    json_type = "string"
    patch = "replace"
    read_only = False

    def __init__(
        self,
        name: str,
        *,
        group: str,
        description: str,
        default: Any = None,
        legacy_default: Any = _SAME,
        nullable: bool = True,
        public: bool = True,
        profile: bool = False,
        policy: bool = False,
        catalog_url: str | None = None,
        semantics: str | None = None,
        rules: Iterable[str] = (),
    ) -> None:
        self.name = name
        self.group = group
        self.description = description
        self.default = default
        self.legacy_default = default if legacy_default is _SAME else legacy_default
        self.nullable = nullable and not policy
        self.public = public
        self.profile = profile
        self.policy = policy
        self.catalog_url = catalog_url
        self.semantics = semantics or ("widget_generation" if policy else "render_default")
        self.extra_rules = tuple(rules)

    # defaults -------------------------------------------------------------------------------------------

    def default_for(self, generation: str) -> Any:
        return copy.deepcopy(self.legacy_default if generation == "legacy" else self.default)

    def effective_default(self, ctx: Context) -> Any:
        return self.default_for(ctx.generation)

    # validation -----------------------------------------------------------------------------------------

    def accepted_types(self) -> list[str]:
        return [self.json_type, *(["null"] if self.nullable else [])]

    def accepted_values(self, ctx: Context) -> list | None:
        return None

    def enum(self) -> list | None:
        return None

    def check(self, value: Any, ctx: Context) -> Any:
        """Validate a non-null value; return its canonical form or raise Invalid."""
        raise NotImplementedError

    def parse(self, value: Any, ctx: Context, path: str, errors: dict[str, list[str]]) -> Any:
        """A PATCH member -> canonical value, CLEAR (explicit null), or INVALID (errors recorded)."""
        if value is None:
            if self.nullable:
                return CLEAR
            errors.setdefault(path, []).append(
                "May not be null: this localization-policy field always has a value; send one of its values."
            )
            return INVALID
        try:
            return self.check(value, ctx)
        except Invalid as exc:
            errors.setdefault(path, []).append(exc.message)
            return INVALID

    # description -----------------------------------------------------------------------------------------

    def constraints(self) -> dict[str, Any]:
        return {}

    def python_pattern(self) -> str | None:
        return None

    def rules(self, ctx: Context) -> list[str]:
        out = [f"JSON {self.json_type}; other JSON types are refused, never coerced."]
        c = self.constraints()
        if c.get("min_length") is not None or c.get("max_length") is not None:
            out.append(f"{c.get('min_length', 0)} to {c['max_length']} characters.")
        if c.get("minimum") is not None:
            out.append(f"Integer from {c['minimum']} to {c['maximum']} inclusive.")
        if c.get("min_items") is not None:
            out.append(f"{c['min_items']} to {c['max_items']} items, no duplicates.")
        if self.python_pattern():
            out.append("Must match `pattern` (the whole value).")
        enum = self.enum()
        if enum is not None:
            out.append(f"One of {', '.join(_json_name(v) for v in enum)}.")
        if self.nullable:
            out.append(f"null removes the stored key; {self.semantics_text()}")
        else:
            out.append("null is refused (422); omit the field to keep the stored value.")
        out.extend(self.extra_rules)
        return out

    def semantics_text(self) -> str:
        return {
            "render_default": "the render default (`effective_default`) applies.",
            "on_when_cleared": "the toggle is on again (`effective_default` true).",
            "catalogue_text": "the built-in text in the visitor's language applies.",
            "widget_generation": "the implicit default of the widget's generation applies.",
            "empty": "the value is empty again.",
        }.get(self.semantics, "the render default applies.")

    def structure(self, ctx: Context) -> dict[str, Any]:
        """Members describing nested values (`items`, `properties`, `keys`, `values`, `aliases`)."""
        return {}

    def describe(self, ctx: Context) -> dict[str, Any]:
        pattern = self.python_pattern()
        member = {
            "type": self.kind,
            "group": self.group,
            "description": self.description,
            "read_only": self.read_only,
            "strict_json_type": self.json_type,
            "accepted_types": self.accepted_types(),
            "nullable": self.nullable,
            "patch": self.patch,
            "enum": self.enum(),
            "accepted_values": self.accepted_values(ctx),
            "minimum": None,
            "maximum": None,
            "min_length": None,
            "max_length": None,
            "min_items": None,
            "max_items": None,
            "unique_items": None,
            "pattern": pcre(pattern) if pattern else None,
            "default": self.default_for("new"),
            "defaults": {g: self.default_for(g) for g in GENERATIONS},
            "effective_default": self.effective_default(ctx),
            "default_semantics": self.semantics,
            "validation_rules": self.rules(ctx),
            "catalog_url": self.catalog_url,
            "public": self.public,
            "profile_overridable": self.profile,
            "localization_policy": self.policy,
            "items": None,
            "properties": None,
            "keys": None,
            "values": None,
            "aliases": None,
        }
        member.update(self.constraints())
        member.update(self.structure(ctx))
        return member

    # OpenAPI ----------------------------------------------------------------------------------------------

    def openapi_value(self) -> dict[str, Any]:
        """JSON Schema of a non-null value (as read back)."""
        raise NotImplementedError

    def openapi(self, *, write: bool) -> dict[str, Any]:
        schema = self.openapi_value()
        nullable = self.nullable if write else self.default_for("new") is None or self.default_for("legacy") is None
        if nullable:
            schema = _nullable(schema)
        schema["description"] = self.description
        return schema


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    schema = dict(schema)
    if "anyOf" in schema:
        schema["anyOf"] = [*schema["anyOf"], {"type": "null"}]
        return schema
    kind = schema.get("type")
    if isinstance(kind, str):
        schema["type"] = [kind, "null"]
    if "enum" in schema:
        schema["enum"] = [*schema["enum"], None]
    return schema


class StringField(Field):
    kind = "string"
    json_type = "string"

    def __init__(self, name: str, *, pattern: str, max_length: int, min_length: int = 1, **kwargs) -> None:
        super().__init__(name, **kwargs)
        self.pattern = pattern
        self.min_length = min_length
        self.max_length = max_length
        self._compiled = re.compile(pattern)

    def python_pattern(self) -> str | None:
        return self.pattern

    def constraints(self) -> dict[str, Any]:
        return {"min_length": self.min_length, "max_length": self.max_length}

    def check(self, value: Any, ctx: Context) -> Any:
        if not isinstance(value, str):
            raise Invalid(_type_error("string"))
        _check_unicode(value)
        if not self.min_length <= len(value) <= self.max_length:
            raise Invalid(f"Must be {self.min_length} to {self.max_length} characters long.")
        if not self._compiled.fullmatch(value):
            raise Invalid(self.pattern_message())
        return value

    def pattern_message(self) -> str:
        return "Does not match the field's pattern."

    def openapi_value(self) -> dict[str, Any]:
        return {
            "type": "string",
            "minLength": self.min_length,
            "maxLength": self.max_length,
            "pattern": f"^(?:{self.pattern})$",
        }


class TextField(StringField):
    """A display text; null means the built-in catalogue text in the visitor's language."""

    kind = "text"

    def __init__(self, name: str, *, max_length: int, multiline: bool = False, **kwargs) -> None:
        kwargs.setdefault("semantics", "catalogue_text")
        super().__init__(
            name, pattern=MULTI_LINE_TEXT if multiline else SINGLE_LINE_TEXT, max_length=max_length, **kwargs
        )
        self.multiline = multiline

    def pattern_message(self) -> str:
        allowed = "line breaks are allowed" if self.multiline else "line breaks are not allowed"
        return f"Must contain a visible character and no control characters ({allowed})."


class ColorField(StringField):
    kind = "color"

    def __init__(self, name: str, **kwargs) -> None:
        super().__init__(name, pattern=COLOR, min_length=7, max_length=7, **kwargs)

    def pattern_message(self) -> str:
        return "Must be a #RRGGBB hex colour."


class UrlField(StringField):
    kind = "url"

    def __init__(self, name: str, **kwargs) -> None:
        super().__init__(name, pattern=HTTPS_URL, min_length=9, max_length=2048, **kwargs)

    def pattern_message(self) -> str:
        return "Must be an absolute https:// URL without user:password."


class IntegerField(Field):
    kind = "integer"
    json_type = "integer"

    def __init__(self, name: str, *, minimum: int, maximum: int, **kwargs) -> None:
        super().__init__(name, **kwargs)
        self.minimum = minimum
        self.maximum = maximum

    def constraints(self) -> dict[str, Any]:
        return {"minimum": self.minimum, "maximum": self.maximum}

    def check(self, value: Any, ctx: Context) -> Any:
        if isinstance(value, bool) or not isinstance(value, int):
            raise Invalid(_type_error("integer"))
        if not self.minimum <= value <= self.maximum:
            raise Invalid(f"Must be from {self.minimum} to {self.maximum}.")
        return value

    def openapi_value(self) -> dict[str, Any]:
        return {"type": "integer", "minimum": self.minimum, "maximum": self.maximum}


class IntegerChoiceField(Field):
    kind = "integer_enum"
    json_type = "integer"

    def __init__(self, name: str, *, choices: tuple[int, ...], **kwargs) -> None:
        super().__init__(name, **kwargs)
        self.choices = choices

    def enum(self) -> list | None:
        return list(self.choices)

    def accepted_values(self, ctx: Context) -> list | None:
        return list(self.choices)

    def constraints(self) -> dict[str, Any]:
        return {"minimum": min(self.choices), "maximum": max(self.choices)}

    def rules(self, ctx: Context) -> list[str]:
        return [r for r in super().rules(ctx) if not r.startswith("Integer from")]

    def check(self, value: Any, ctx: Context) -> Any:
        if isinstance(value, bool) or not isinstance(value, int):
            raise Invalid(_type_error("integer"))
        if value not in self.choices:
            raise Invalid(f"Must be one of {', '.join(map(str, self.choices))}.")
        return value

    def openapi_value(self) -> dict[str, Any]:
        return {"type": "integer", "enum": list(self.choices)}


class BooleanField(Field):
    kind = "boolean"
    json_type = "boolean"

    def check(self, value: Any, ctx: Context) -> Any:
        if not isinstance(value, bool):
            raise Invalid(_type_error("boolean"))
        return value

    def openapi_value(self) -> dict[str, Any]:
        return {"type": "boolean"}


class ChoiceField(Field):
    """A closed vocabulary of strings. `aliases` maps other JSON values (booleans) to members;
    `available` narrows what this widget may write now (e.g. the plan's skins)."""

    kind = "enum"
    json_type = "string"

    def __init__(
        self,
        name: str,
        *,
        choices: tuple[str, ...],
        aliases: dict[bool, str] | None = None,
        available: Callable[[Context], Iterable[str]] | None = None,
        unavailable: str = "",
        **kwargs,
    ) -> None:
        super().__init__(name, **kwargs)
        self.choices = choices
        self.aliases = aliases or {}
        self.available = available
        self.unavailable = unavailable

    def enum(self) -> list | None:
        return list(self.choices)

    def _writable(self, ctx: Context) -> list[str]:
        if self.available is None:
            return list(self.choices)
        allowed = set(self.available(ctx))
        return [c for c in self.choices if c in allowed]

    def accepted_values(self, ctx: Context) -> list | None:
        return [*self._writable(ctx), *self.aliases]

    def accepted_types(self) -> list[str]:
        alias_types = ["boolean"] if self.aliases else []
        return [self.json_type, *alias_types, *(["null"] if self.nullable else [])]

    def rules(self, ctx: Context) -> list[str]:
        out = super().rules(ctx)
        if self.aliases:
            out[0] = "JSON string, or a boolean alias; other JSON types are refused, never coerced."
            out.extend(
                f"Alias: {_json_name(k)} means {_json_name(v)} (read back as the string)."
                for k, v in self.aliases.items()
            )
        if self.available is not None:
            out.append("`accepted_values` lists the members this widget may write now; " + self.unavailable)
        return out

    def structure(self, ctx: Context) -> dict[str, Any]:
        if not self.aliases:
            return {}
        return {"aliases": [{"value": k, "means": v} for k, v in self.aliases.items()]}

    def check(self, value: Any, ctx: Context) -> Any:
        if isinstance(value, bool) and self.aliases:
            return self.aliases[value]
        if not isinstance(value, str):
            raise Invalid(_type_error("string"))
        if value in self._writable(ctx):
            return value
        if value in self.choices:
            raise Invalid(self.unavailable or "Not available for this widget.")
        raise Invalid(f"Must be one of {', '.join(self.choices)}.")

    def openapi_value(self) -> dict[str, Any]:
        return {"type": "string", "enum": list(self.choices)}

    def openapi(self, *, write: bool) -> dict[str, Any]:
        if not (write and self.aliases):
            return super().openapi(write=write)
        options = [{"type": "string", "enum": list(self.choices)}, {"type": "boolean"}]
        if self.nullable:
            options.append({"type": "null"})
        return {"anyOf": options, "description": self.description}


class ChoiceListField(Field):
    kind = "enum_list"
    json_type = "array"

    def __init__(self, name: str, *, choices: tuple[str, ...], min_items: int, max_items: int, **kwargs) -> None:
        super().__init__(name, **kwargs)
        self.choices = choices
        self.min_items = min_items
        self.max_items = max_items

    def constraints(self) -> dict[str, Any]:
        return {"min_items": self.min_items, "max_items": self.max_items, "unique_items": True}

    def rules(self, ctx: Context) -> list[str]:
        out = super().rules(ctx)
        out.insert(1, f"Every item is one of {', '.join(self.choices)}.")
        return out

    def structure(self, ctx: Context) -> dict[str, Any]:
        return {"items": {"strict_json_type": "string", "enum": list(self.choices)}}

    def check(self, value: Any, ctx: Context) -> Any:
        if not isinstance(value, list):
            raise Invalid(_type_error("array"))
        for index, item in enumerate(value):
            if not isinstance(item, str) or item not in self.choices:
                raise Invalid(f"Item {index} must be one of {', '.join(self.choices)}.")
        if len(set(value)) != len(value):
            raise Invalid("Items must not repeat.")
        if not self.min_items <= len(value) <= self.max_items:
            raise Invalid(f"Must have {self.min_items} to {self.max_items} items.")
        return list(value)

    def openapi_value(self) -> dict[str, Any]:
        return {
            "type": "array",
            "items": {"type": "string", "enum": list(self.choices)},
            "minItems": self.min_items,
            "maxItems": self.max_items,
            "uniqueItems": True,
        }


class IconField(Field):
    """A preset id from the icon catalogue, or `custom:{file_id}` of an icon uploaded to this widget."""

    kind = "icon"
    json_type = "string"

    def accepted_values(self, ctx: Context) -> list | None:
        return list(ICON_PRESET_IDS)

    def python_pattern(self) -> str | None:
        return CUSTOM_ICON_BODY

    def rules(self, ctx: Context) -> list[str]:
        out = [r for r in super().rules(ctx) if not r.startswith("Must match")]
        out.insert(
            1,
            "A preset id from `accepted_values` (the catalogue at `catalog_url`), or `custom:{file_id}` "
            "matching `pattern`, naming an icon uploaded with POST /v1/widget/icons to this widget.",
        )
        return out

    def check(self, value: Any, ctx: Context) -> Any:
        if not isinstance(value, str):
            raise Invalid(_type_error("string"))
        if value in ICON_PRESET_IDS:
            return value
        if re.fullmatch(CUSTOM_ICON_BODY, value):
            if ctx.icon_exists(int(value.split(":", 1)[1])):
                return value
            raise Invalid("No icon with this file id was uploaded to this widget (POST /v1/widget/icons).")
        raise Invalid("Must be a preset id from GET /v1/widget/icons or custom:{file_id}.")

    def openapi_value(self) -> dict[str, Any]:
        return {"type": "string", "anyOf": [{"enum": list(ICON_PRESET_IDS)}, {"pattern": f"^{CUSTOM_ICON_BODY}$"}]}


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
        if value is None:
            return CLEAR
        if not isinstance(value, dict):
            errors.setdefault(path, []).append(_type_error("object"))
            return INVALID
        leaves = self.leaves()
        delta: dict[str, Any] = {}
        ok = True
        for device, overrides in value.items():
            device_path = f"{path}.{device}"
            if device not in DEVICES:
                errors.setdefault(device_path, []).append(f"Unknown device; one of {', '.join(DEVICES)}.")
                ok = False
                continue
            if overrides is None:
                delta[device] = CLEAR
                continue
            if not isinstance(overrides, dict):
                errors.setdefault(device_path, []).append(_type_error("object"))
                ok = False
                continue
            changes: dict[str, Any] = {}
            for leaf_name, leaf_value in overrides.items():
                leaf_path = f"{device_path}.{leaf_name}"
                leaf = leaves.get(leaf_name)
                if leaf is None:
                    errors.setdefault(leaf_path, []).append(
                        "Not overridable per device; overridable: " + ", ".join(leaves) + "."
                    )
                    ok = False
                    continue
                if leaf_value is None:
                    changes[leaf_name] = CLEAR
                    continue
                try:
                    changes[leaf_name] = leaf.check(leaf_value, ctx)
                except Invalid as exc:
                    errors.setdefault(leaf_path, []).append(exc.message)
                    ok = False
            delta[device] = changes
        return delta if ok else INVALID

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
        devices = {d: (_nullable(profile) if write else dict(profile)) for d in DEVICES}
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
        if value is None:
            return CLEAR
        if not isinstance(value, dict):
            errors.setdefault(path, []).append(_type_error("object"))
            return INVALID
        texts = self.texts()
        ok = True
        out: dict[str, dict[str, str]] = {}
        for locale, entry in value.items():
            locale_path = f"{path}.{locale}"
            if locale not in LANGUAGES:
                errors.setdefault(locale_path, []).append(f"Unknown locale; one of {', '.join(LANGUAGES)}.")
                ok = False
                continue
            if not isinstance(entry, dict):
                errors.setdefault(locale_path, []).append(_type_error("object"))
                ok = False
                continue
            if not entry:
                errors.setdefault(locale_path, []).append("Must name at least one of " + ", ".join(TRANSLATABLE) + ".")
                ok = False
                continue
            out[locale] = {}
            for name, text in entry.items():
                text_path = f"{locale_path}.{name}"
                definition = texts.get(name)
                if definition is None:
                    errors.setdefault(text_path, []).append("Not translatable; one of " + ", ".join(TRANSLATABLE) + ".")
                    ok = False
                    continue
                try:
                    out[locale][name] = definition.check(text, ctx)
                except Invalid as exc:
                    errors.setdefault(text_path, []).append(exc.message)
                    ok = False
        if not ok:
            return INVALID
        return out or CLEAR

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


class ReadOnlyField(Field):
    """Computed by the server; sending it on PATCH is 422 naming it."""

    kind = "read_only"
    patch = "read_only"
    read_only = True

    def __init__(self, name: str, *, json_type: str, openapi: dict[str, Any], **kwargs) -> None:
        kwargs.setdefault("semantics", "computed")
        super().__init__(name, public=False, nullable=False, **kwargs)
        self.json_type = json_type
        self._openapi = openapi

    def accepted_types(self) -> list[str]:
        return []

    def rules(self, ctx: Context) -> list[str]:
        return ["Read-only: computed by the server; sending it on PATCH is refused with 422 naming it."]

    def check(self, value: Any, ctx: Context) -> Any:
        raise Invalid("Read-only field; it cannot be written.")

    def openapi(self, *, write: bool) -> dict[str, Any]:
        return {**copy.deepcopy(self._openapi), "readOnly": True, "description": self.description}
