"""The operations derived from the definition: PATCH validation, merge, the effective and public values,
the schema document, the OpenAPI object and the definition's digest."""

from __future__ import annotations

import copy
import hashlib
import json
from typing import Any

from ..settings_fields import CLEAR, INVALID, Context, DeviceProfilesField
from ..settings_vocabulary import NOT_SETTINGS, SCHEMA_VERSION
from .definition import _DEFINITION, FIELDS, REVISION_FIELDS, WRITABLE

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
