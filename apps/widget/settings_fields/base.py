"""The field framework's ground: the sentinels, the validation context, the PCRE form of a pattern and
the base `Field` (defaults, validation, description, OpenAPI)."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ..settings_vocabulary import GENERATIONS, SKINS


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
    return f"Must be a JSON {json_type}; other types are never coerced."


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
