"""THE one definition of widget settings.

Every settings field is declared once below (`FIELDS`), with its JSON type, constraints, defaults
(legacy and new widgets), PATCH semantics, nullability and read-only flag. Everything else is
derived from these declarations and nothing else:

- PATCH validation (`parse_patch`, `merge`, `check_merged`),
- the values `GET /v1/widget/settings` shows (`effective_values`),
- `GET /v1/widget/settings/schema` (`schema_document`),
- the OpenAPI components of the settings bodies (`openapi_object`),
- the public visitor config's settings members (`public_values`).

Conventions every field follows:
- Types are strict: a JSON integer is never accepted as a string or a float, nor a boolean as 0/1.
- A key that is not stored takes its render default (`effective_default`); an explicit null on
  PATCH removes the stored key. The six localization-policy fields refuse null.
- `pattern` is published as PCRE with delimiters (`/\\A(?:...)\\z/u`); the server matches the same
  body with Python's `re.fullmatch`. Bodies use only the syntax both engines share.
- Legacy widgets (created before the cutoff of `apps.widget.services.LEGACY_CUTOFF`) and new widgets
  differ only in the implicit localization defaults the spec names.

Changing a field (adding, removing, or changing a constraint or default) changes
`definition_digest()`; a test pins it, so the change must also bump `SCHEMA_VERSION`.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

SCHEMA_VERSION = 1

LANGUAGES = ("ru", "en", "el", "de", "es", "ar", "zh")
DEFAULT_LANGUAGE_CHOICES = ("auto", *LANGUAGES)
DEVICES = ("desktop", "mobile")
TRANSLATABLE = ("widget_name", "widget_signature", "widget_greeting")
GENERATIONS = ("legacy", "new")

SKINS_URL = "/api/v1/widget/skins"
ICONS_URL = "/api/v1/widget/icons"
LANGUAGE_URL = "/api/v1/widget/language"


@dataclass(frozen=True)
class Skin:
    id: str
    name: str
    premium: bool


SKINS: tuple[Skin, ...] = (
    Skin("classic", "Classic", False),
    Skin("minimal", "Minimal", False),
    Skin("rounded", "Rounded", False),
    Skin("compact", "Compact", False),
    Skin("glass", "Glass", True),
    Skin("gradient", "Gradient", True),
    Skin("neon", "Neon", True),
    Skin("corporate", "Corporate", True),
)
SKIN_IDS = tuple(s.id for s in SKINS)

ICON_PRESETS: tuple[tuple[str, str], ...] = (
    ("chat_bubble", "Chat bubble"),
    ("chat_dots", "Chat bubble with dots"),
    ("chat_double", "Two chat bubbles"),
    ("message_square", "Square message"),
    ("headset", "Headset"),
    ("support_agent", "Support agent"),
    ("question", "Question mark"),
    ("envelope", "Envelope"),
    ("phone", "Phone"),
    ("hand_wave", "Waving hand"),
    ("sparkle", "Sparkle"),
    ("heart", "Heart"),
)
ICON_PRESET_IDS = tuple(i for i, _ in ICON_PRESETS)
CUSTOM_ICON_BODY = r"custom:[1-9][0-9]{0,17}"

# Bodies of `pattern` (matched with re.fullmatch; published as PCRE with \A...\z anchors).
SINGLE_LINE_TEXT = r"[^\x00-\x1F\x7F]*[^\x00-\x20\x7F][^\x00-\x1F\x7F]*"
MULTI_LINE_TEXT = r"[^\x00-\x09\x0B-\x1F\x7F]*[^\x00-\x20\x7F][^\x00-\x09\x0B-\x1F\x7F]*"
COLOR = r"#[0-9A-Fa-f]{6}"
HTTPS_URL = r"https://[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?(?::[0-9]{1,5})?(?:[/?#][^\x00-\x20\x7F]*)?"

# Names callers sometimes send that belong to other resources: refused with a pointer, never stored.
NOT_SETTINGS: dict[str, str] = {
    **dict.fromkeys(
        ("messengers", "messenger", "messenger_credentials", "channels", "tg", "vk", "wa"),
        "Messenger credentials are not widget settings; use /v1/messengers.",
    ),
    **dict.fromkeys(
        ("ai", "ai_settings", "assistant", "assistants", "ai_operator"),
        "AI configuration is not widget settings; use /v1/ai/settings and /v1/ai/assistants.",
    ),
    **dict.fromkeys(("map", "widget_map", "map_settings"), "The map subtree is not part of widget settings."),
    **dict.fromkeys(
        ("price_list", "pricelist", "widget_price_list"), "The price-list subtree is not part of widget settings."
    ),
    **dict.fromkeys(
        ("logo", "widget_logo", "logo_url"),
        "The logo is not part of widget settings; the launcher icon is `icon_preset`.",
    ),
    **dict.fromkeys(
        ("quick_phrases", "widget_quick_phrases", "quick_phrases_i18n"),
        "Quick phrases are not part of widget settings; AI assistants carry `quick_phrases`.",
    ),
}


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


# --- the definition ---------------------------------------------------------------------------------------


def _toggle(name: str, description: str, *, profile: bool = False) -> BooleanField:
    return BooleanField(
        name, group="toggles", description=description, default=True, semantics="on_when_cleared", profile=profile
    )


def _color(name: str, description: str, default: str) -> ColorField:
    return ColorField(name, group="colours", description=description, default=default)


def _offset(name: str, description: str, default: int, maximum: int = 400) -> IntegerField:
    return IntegerField(
        name, group="placement", description=description, default=default, minimum=0, maximum=maximum, profile=True
    )


def _available_skins(ctx: Context) -> frozenset[str]:
    return ctx.available_skins


_TEXTS: list[Field] = [
    TextField(
        "widget_name",
        group="texts",
        max_length=60,
        description="Title in the chat window header. Translatable (`widget_text_translations`).",
    ),
    TextField(
        "widget_signature",
        group="texts",
        max_length=120,
        description="Subtitle under the title (e.g. 'We answer within minutes'). Translatable.",
    ),
    TextField(
        "widget_greeting",
        group="texts",
        max_length=500,
        multiline=True,
        description="Greeting bubble shown next to the launcher and as the first line of a new chat. Translatable.",
    ),
    TextField(
        "widget_input_placeholder", group="texts", max_length=100, description="Placeholder of the message input."
    ),
    TextField(
        "widget_offline_message",
        group="texts",
        max_length=500,
        multiline=True,
        description="Text above the offline form while no operator is online.",
    ),
]

_DEFINITION: list[Field] = [
    *_TEXTS,
    _color("widget_color_primary", "Main colour: header, send button, links.", "#1E88E5"),
    _color("widget_color_primary_text", "Text and icons drawn on the main colour.", "#FFFFFF"),
    _color("widget_color_background", "Chat window background.", "#FFFFFF"),
    _color("widget_color_text", "Body text colour.", "#1F2933"),
    _color("widget_color_agent_bubble", "Background of operator messages.", "#F1F3F4"),
    _color("widget_color_visitor_bubble", "Background of visitor messages.", "#1E88E5"),
    _color("widget_color_button", "Launcher button background.", "#1E88E5"),
    ChoiceField(
        "widget_skin",
        group="look",
        choices=SKIN_IDS,
        default="classic",
        catalog_url=SKINS_URL,
        available=_available_skins,
        unavailable="A premium skin not included in this widget's plan (see GET /v1/widget/skins).",
        description="Visual skin; the catalogue (with `premium` and `available`) is GET /v1/widget/skins.",
    ),
    ChoiceField(
        "widget_theme",
        group="look",
        choices=("light", "dark", "auto"),
        default="light",
        description="Light or dark palette; `auto` follows the visitor's system preference.",
    ),
    ChoiceField(
        "widget_font_family",
        group="look",
        choices=("system", "inter", "roboto", "open_sans", "pt_sans", "montserrat"),
        default="system",
        description="Font of the chat window; `system` uses the visitor's system font.",
    ),
    IntegerField(
        "widget_border_radius",
        group="look",
        minimum=0,
        maximum=32,
        default=12,
        description="Corner radius of the chat window and bubbles, in CSS pixels.",
    ),
    ChoiceField(
        "widget_position",
        group="placement",
        choices=("bottom_right", "bottom_left", "top_right", "top_left"),
        default="bottom_right",
        profile=True,
        description="Corner of the page the launcher sits in.",
    ),
    _offset("widget_offset_x", "Horizontal distance of the launcher from its corner, in CSS pixels.", 20),
    _offset("widget_offset_y", "Vertical distance of the launcher from its corner, in CSS pixels.", 20),
    _offset("widget_chat_offset_x", "Horizontal distance of the open chat window from its corner, in CSS pixels.", 20),
    _offset(
        "widget_chat_offset_y",
        "Vertical distance of the open chat window from its corner, in CSS pixels.",
        90,
        maximum=600,
    ),
    IntegerChoiceField(
        "widget_button_size",
        group="placement",
        choices=(50, 75, 100),
        default=75,
        profile=True,
        description="Launcher diameter in CSS pixels: 50, 75 or 100.",
    ),
    IntegerField(
        "widget_chat_width",
        group="placement",
        minimum=300,
        maximum=600,
        default=370,
        profile=True,
        description="Width of the open chat window in CSS pixels (mobile renders full width unless a "
        "mobile profile overrides it).",
    ),
    IntegerField(
        "widget_chat_height",
        group="placement",
        minimum=400,
        maximum=800,
        default=600,
        profile=True,
        description="Height of the open chat window in CSS pixels.",
    ),
    IntegerField(
        "widget_z_index",
        group="placement",
        minimum=1,
        maximum=2147483647,
        default=2147483000,
        description="CSS z-index of the launcher and window, for pages with their own overlays.",
    ),
    IconField(
        "icon_preset",
        group="icon",
        default="chat_bubble",
        catalog_url=ICONS_URL,
        profile=True,
        description="Launcher icon: a preset id (GET /v1/widget/icons) or `custom:{file_id}` returned by "
        "POST /v1/widget/icons.",
    ),
    ChoiceField(
        "icon_custom_animated",
        group="icon",
        choices=("static", "spin", "spiral"),
        default="static",
        aliases={True: "spin", False: "static"},
        profile=True,
        description="Launcher icon motion: static, spin or spiral. Boolean aliases: true is spin, false is "
        "static; read back as the string.",
    ),
    _toggle(
        "widget_show_button",
        "Show the launcher button (off: the chat opens only from the page's own script call).",
        profile=True,
    ),
    _toggle("widget_show_greeting", "Show the greeting bubble next to the launcher.", profile=True),
    _toggle("widget_show_agent_avatars", "Show operator avatars in the header and next to their messages."),
    _toggle("widget_show_agent_names", "Show operator names in the header and next to their messages."),
    _toggle("widget_show_typing_indicator", "Show the operator typing indicator."),
    _toggle("widget_show_rating", "Offer the visitor to rate the chat."),
    _toggle("widget_show_offline_form", "Show the offline form while no operator is online."),
    _toggle("widget_show_file_upload", "Let visitors attach files."),
    _toggle("widget_show_emoji_picker", "Show the emoji picker."),
    _toggle("widget_show_unread_badge", "Show the unread-messages badge on the launcher."),
    _toggle("widget_show_branding", "Show the service's 'powered by' line."),
    ChoiceField(
        "operators_display_mode",
        group="behaviour",
        choices=("online", "all", "single", "hidden"),
        default="online",
        description="Operators shown in the header: `online` (header-visible operators who are online), "
        "`all` (every header-visible operator), `single` (one representative), `hidden`.",
    ),
    ChoiceField(
        "widget_offline_mode",
        group="behaviour",
        choices=("form", "chat", "hide"),
        default="form",
        description="While no operator is online: `form` shows the offline form, `chat` keeps the chat "
        "open (messages wait), `hide` hides the launcher.",
    ),
    IntegerField(
        "widget_greeting_delay_sec",
        group="behaviour",
        minimum=0,
        maximum=600,
        default=3,
        profile=True,
        description="Seconds after page load before the greeting bubble appears.",
    ),
    IntegerField(
        "widget_auto_open_delay_sec",
        group="behaviour",
        minimum=0,
        maximum=3600,
        default=0,
        profile=True,
        description="Seconds after page load before the chat window opens by itself; 0 never opens it.",
    ),
    BooleanField(
        "widget_sound_enabled", group="behaviour", default=True, description="Play a sound on a new operator message."
    ),
    BooleanField(
        "widget_prechat_form_enabled",
        group="behaviour",
        default=False,
        description="Ask for the visitor's contact details before the first message.",
    ),
    ChoiceListField(
        "widget_prechat_fields",
        group="behaviour",
        choices=("name", "email", "phone"),
        min_items=1,
        max_items=3,
        default=["name", "email"],
        description="Fields of the pre-chat form, in display order.",
    ),
    UrlField(
        "widget_privacy_policy_url",
        group="behaviour",
        description="Privacy policy linked from the pre-chat and offline forms; null shows no link.",
    ),
    ChoiceField(
        "widget_default_language",
        group="localization",
        choices=DEFAULT_LANGUAGE_CHOICES,
        default="auto",
        legacy_default="ru",
        policy=True,
        catalog_url=LANGUAGE_URL,
        description="Language the widget starts in; `auto` follows the visitor's browser. Also "
        "readable and writable alone at /v1/widget/language.",
    ),
    ChoiceListField(
        "widget_supported_languages",
        group="localization",
        choices=LANGUAGES,
        min_items=1,
        max_items=len(LANGUAGES),
        default=["ru", "en"],
        policy=True,
        description="Enabled locales: offered in the language switcher and allowed as keys of "
        "`widget_text_translations`.",
    ),
    ChoiceField(
        "widget_fallback_language",
        group="localization",
        choices=LANGUAGES,
        default="en",
        legacy_default="ru",
        policy=True,
        description="Language used when the visitor's language (with `auto`) is not enabled.",
    ),
    BooleanField(
        "widget_auto_translate_custom_texts",
        group="localization",
        default=False,
        policy=True,
        public=False,
        description="Translate the custom texts into enabled locales with AI (manual translations win).",
    ),
    ChoiceField(
        "widget_content_source_language",
        group="localization",
        choices=LANGUAGES,
        default="ru",
        policy=True,
        description="Language the custom texts (`widget_name`, `widget_signature`, `widget_greeting`) are "
        "written in; the source of AI translations.",
    ),
    BooleanField(
        "widget_show_lang_switcher",
        group="localization",
        default=True,
        policy=True,
        description="Show the language switcher (with more than one enabled locale).",
    ),
    TranslationsField(
        "widget_text_translations",
        group="localization",
        texts=lambda: _TEXTS[:3],
        description="Manual translations: `{locale: {widget_name?, widget_signature?, "
        "widget_greeting?}}` keyed by enabled locales. Replaced whole; {} clears.",
    ),
    DeviceProfilesField(
        "device_profiles",
        group="device_profiles",
        leaves=lambda: [f for f in _DEFINITION if f.profile],
        description="Sparse overrides per device (`desktop`, `mobile`) of the profile-overridable "
        "fields; merged deeply on PATCH.",
    ),
    ReadOnlyField(
        "widget_id",
        group="meta",
        json_type="integer",
        openapi={"type": "integer"},
        description="Id of the widget these settings belong to.",
    ),
    ReadOnlyField(
        "api_enabled",
        group="meta",
        json_type="boolean",
        openapi={"type": "boolean"},
        description="Whether 'Allow widget API (JS and REST)' is on; changed in the web cabinet only.",
    ),
    ReadOnlyField(
        "widget_language_policy_revision",
        group="meta",
        json_type="integer",
        openapi={"type": "integer", "minimum": 0},
        description="Increments whenever a localization-policy field or the translation matrix changes.",
    ),
    ReadOnlyField(
        "widget_translation_revision",
        group="meta",
        json_type="integer",
        openapi={"type": "integer", "minimum": 0},
        description="Alias of `widget_language_policy_revision`.",
    ),
    ReadOnlyField(
        "widget_translation_status",
        group="meta",
        json_type="object",
        openapi={
            "type": "object",
            "required": ["available", "enabled", "reason", "revision", "total", "counts"],
            "properties": {
                "available": {"type": "boolean"},
                "enabled": {"type": "boolean"},
                "reason": {"type": ["string", "null"]},
                "revision": {"type": "integer"},
                "total": {"type": "integer"},
                "counts": {
                    "type": "object",
                    "required": ["ready", "stale", "pending", "failed"],
                    "properties": {k: {"type": "integer"} for k in ("ready", "stale", "pending", "failed")},
                },
            },
        },
        description="AI translation state `{available, enabled, reason, revision, total, counts: {ready, "
        "stale, pending, failed}}`; `available:false` with `reason: schema_unavailable` and "
        "zero counts while the translation store is missing.",
    ),
    ReadOnlyField(
        "updated_at",
        group="meta",
        json_type="string",
        openapi={"type": "string", "format": "date-time"},
        description="Last successful settings write (the widget's creation time before any write).",
    ),
]

FIELDS: dict[str, Field] = {f.name: f for f in _DEFINITION}
WRITABLE: tuple[str, ...] = tuple(f.name for f in _DEFINITION if not f.read_only)
READ_ONLY: tuple[str, ...] = tuple(f.name for f in _DEFINITION if f.read_only)
POLICY_FIELDS: tuple[str, ...] = tuple(f.name for f in _DEFINITION if f.policy)
PROFILE_FIELDS: tuple[str, ...] = tuple(f.name for f in _DEFINITION if f.profile)
# Fields whose change bumps the language-policy revision.
REVISION_FIELDS: tuple[str, ...] = (*POLICY_FIELDS, "widget_text_translations")

assert len(FIELDS) == len(_DEFINITION), "duplicate settings field names"
assert len(POLICY_FIELDS) == 6, POLICY_FIELDS
assert set(READ_ONLY) == {
    "widget_id",
    "api_enabled",
    "widget_language_policy_revision",
    "widget_translation_revision",
    "widget_translation_status",
    "updated_at",
}


# --- the operations derived from the definition -----------------------------------------------------------


def parse_patch(body: Any, ctx: Context) -> tuple[dict[str, Any], dict[str, list[str]]]:
    """Validate a PATCH body field by field. Returns (delta, errors): `delta` maps names to canonical
    values, CLEAR (explicit null), or a device-profiles delta. Nothing is dropped: every member is
    either in `delta` or named in `errors`."""
    if not isinstance(body, dict):
        return {}, {"body": ["Expected a JSON object of settings fields."]}
    errors: dict[str, list[str]] = {}
    delta: dict[str, Any] = {}
    for name, value in body.items():
        definition = FIELDS.get(name)
        if definition is None:
            errors[name] = [NOT_SETTINGS.get(name, "Unknown field; GET /v1/widget/settings/schema lists every field.")]
        elif definition.read_only:
            errors[name] = ["Read-only field; it cannot be written."]
        else:
            parsed = definition.parse(value, ctx, name, errors)
            if parsed is not INVALID:
                delta[name] = parsed
    return delta, errors


def merge(stored: dict[str, Any], delta: dict[str, Any]) -> dict[str, Any]:
    """The stored keys after applying `delta` (a copy; `stored` is not changed)."""
    result = copy.deepcopy(stored)
    for name, value in delta.items():
        if name == "device_profiles":
            value = DeviceProfilesField.merge(result.get(name), value)
        if value is CLEAR:
            result.pop(name, None)
        else:
            result[name] = copy.deepcopy(value)
    return result


def check_merged(values: dict[str, Any], ctx: Context, *, delta: dict[str, Any]) -> dict[str, list[str]]:
    """Rules across fields, on the merged stored keys: the matrix may name enabled locales only."""
    errors: dict[str, list[str]] = {}
    effective = effective_values(values, ctx)
    enabled = set(effective["widget_supported_languages"])
    outside = [loc for loc in effective["widget_text_translations"] if loc not in enabled]
    if not outside:
        return errors
    if "widget_text_translations" in delta:
        for locale in outside:
            errors[f"widget_text_translations.{locale}"] = [
                "Not an enabled locale; add it to widget_supported_languages first (or in the same PATCH)."
            ]
    else:
        errors["widget_supported_languages"] = [
            f"The translation matrix has texts for {', '.join(outside)}; keep these locales enabled or replace "
            "widget_text_translations in the same PATCH."
        ]
    return errors


def effective_values(stored: dict[str, Any], ctx: Context) -> dict[str, Any]:
    """Every writable field: its stored value, else its effective default."""
    return {
        name: copy.deepcopy(stored[name]) if name in stored else FIELDS[name].effective_default(ctx)
        for name in WRITABLE
    }


def revision_changed(before: dict[str, Any], after: dict[str, Any], ctx: Context) -> bool:
    old, new = effective_values(before, ctx), effective_values(after, ctx)
    return any(old[name] != new[name] for name in REVISION_FIELDS)


def active_profiles(profiles: dict[str, Any]) -> dict[str, Any]:
    """Device profiles as rendered: disabled profiles (`enabled: false`) fall back to the base settings."""
    return {
        device: {k: v for k, v in overrides.items() if k != "enabled"}
        for device, overrides in profiles.items()
        if overrides.get("enabled", True)
    }


def public_values(stored: dict[str, Any], ctx: Context) -> dict[str, Any]:
    """The `public` fields as the visitor widget renders them."""
    effective = effective_values(stored, ctx)
    out = {name: effective[name] for name in WRITABLE if FIELDS[name].public}
    if out.get("widget_skin") not in ctx.available_skins:  # a premium skin after a plan downgrade
        out["widget_skin"] = FIELDS["widget_skin"].effective_default(ctx)
    out["device_profiles"] = active_profiles(effective["device_profiles"])
    return out


def schema_document(ctx: Context) -> dict[str, Any]:
    return {"schema_version": SCHEMA_VERSION, "fields": {name: f.describe(ctx) for name, f in FIELDS.items()}}


def openapi_object(*, write: bool) -> dict[str, Any]:
    """JSON Schema of the settings object: as read (every field, read-only members marked) or as a
    PATCH body (writable fields only, all optional, null where it clears, nothing else accepted)."""
    fields = [f for f in _DEFINITION if write is False or not f.read_only]
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {f.name: f.openapi(write=write) for f in fields},
        "additionalProperties": False,
    }
    if not write:
        schema["required"] = [f.name for f in fields]
        schema["description"] = (
            "Every settings field with its effective value (the stored value, else the render default). "
            "GET /v1/widget/settings/schema describes each field."
        )
    else:
        schema["description"] = (
            "Any subset of the writable settings fields. Merge-safe: fields not sent keep their stored values. "
            "An explicit null removes the stored key (the render default applies); the six localization-policy "
            "fields refuse null. `device_profiles` merges deeply; `widget_text_translations` replaces the whole "
            "matrix. Unknown and read-only members are refused with 422 naming them."
        )
    return schema


def definition_digest() -> str:
    """A digest of the widget-independent definition (what `SCHEMA_VERSION` versions)."""
    ctx = Context()
    described = {name: f.describe(ctx) for name, f in FIELDS.items()}
    raw = json.dumps(described, sort_keys=True, ensure_ascii=True, default=str)
    return hashlib.sha256(raw.encode()).hexdigest()
