"""The field kinds of one value: strings, texts, colours, URLs, integers, booleans, choices, the icon and
the read-only fields."""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterable
from typing import Any

from ..settings_vocabulary import COLOR, CUSTOM_ICON_BODY, HTTPS_URL, ICON_PRESET_IDS, MULTI_LINE_TEXT, SINGLE_LINE_TEXT
from .base import Context, Field, Invalid, _check_unicode, _json_name, _type_error


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
