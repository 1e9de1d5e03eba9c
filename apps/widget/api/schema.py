"""OpenAPI components of the settings bodies, generated from the one definition.

`WidgetSettingsDoc` (the settings as read) and `WidgetSettingsPatchDoc` (a PATCH body) are marker
serializers; these extensions replace their schemas with `settings_schema.openapi_object`, so the
OpenAPI document, the schema endpoint and validation all come from `settings_schema.FIELDS`.
"""

from __future__ import annotations

from drf_spectacular.extensions import OpenApiSerializerExtension

from .. import settings_schema


class WidgetSettingsDocExtension(OpenApiSerializerExtension):
    target_class = "apps.widget.api.serializers.WidgetSettingsDoc"

    def get_name(self, auto_schema, direction):
        return "WidgetSettings"

    def map_serializer(self, auto_schema, direction):
        return settings_schema.openapi_object(write=False)


class WidgetSettingsPatchDocExtension(OpenApiSerializerExtension):
    target_class = "apps.widget.api.serializers.WidgetSettingsPatchDoc"

    def get_name(self, auto_schema, direction):
        return "WidgetSettings"

    def map_serializer(self, auto_schema, direction):
        return settings_schema.openapi_object(write=True)


_NULLABLE = {
    "int": {"type": ["integer", "null"]},
    "str": {"type": ["string", "null"]},
    "bool": {"type": ["boolean", "null"]},
    "obj": {"type": ["object", "null"]},
    # `items` always: generators (openapi-python-client) drop a model whose array has none.
    "arr": {"type": ["array", "null"], "items": {}},
}
_MEMBER_SCHEMAS = {
    "type": {
        "type": "string",
        "description": "Logical kind: text, color, url, integer, integer_enum, boolean, enum, "
        "enum_list, icon, device_profiles, translation_matrix, read_only.",
    },
    "group": {"type": "string", "description": "The settings group the field belongs to."},
    "description": {"type": "string", "description": "What the field is, for people."},
    "read_only": {"type": "boolean", "description": "Sending it on PATCH is 422 naming it."},
    "strict_json_type": {
        "type": "string",
        "description": "JSON type of a (non-null) value as read back; never coerced from another type.",
    },
    "accepted_types": {
        "type": "array",
        "items": {"type": "string"},
        "description": "JSON types PATCH accepts (`null` when null clears; `boolean` for boolean aliases).",
    },
    "nullable": {"type": "boolean", "description": "An explicit null on PATCH removes the stored key."},
    "patch": {"type": "string", "description": "replace, deep_merge, replace_whole or read_only."},
    "enum": {**_NULLABLE["arr"], "description": "The closed vocabulary of values as read back."},
    "accepted_values": {
        **_NULLABLE["arr"],
        "description": "Values this widget may write now (aliases and the "
        "plan included); for icon_preset the presets (custom:{file_id} matches `pattern`).",
    },
    "minimum": {**_NULLABLE["int"], "description": "The smallest number accepted; null when unbounded."},
    "maximum": {**_NULLABLE["int"], "description": "The largest number accepted; null when unbounded."},
    "min_length": {**_NULLABLE["int"], "description": "The shortest text accepted; null when unbounded."},
    "max_length": {**_NULLABLE["int"], "description": "The longest text accepted; null when unbounded."},
    "min_items": {**_NULLABLE["int"], "description": "The fewest array items accepted; null when unbounded."},
    "max_items": {**_NULLABLE["int"], "description": "The most array items accepted; null when unbounded."},
    "unique_items": {
        **_NULLABLE["bool"],
        "description": "True when array items must differ; null when it does not apply.",
    },
    "pattern": {**_NULLABLE["str"], "description": "PCRE with delimiters, matched against the whole value."},
    "default": {"description": "Default of new widgets."},
    "defaults": {"type": "object", "description": "`{legacy, new}`: the implicit default per widget generation."},
    "effective_default": {"description": "The value that applies to this widget while no value is stored."},
    "default_semantics": {
        "type": "string",
        "description": "render_default, on_when_cleared, catalogue_text, widget_generation, empty or computed.",
    },
    "validation_rules": {
        "type": "array",
        "items": {"type": "string"},
        "description": "The rules a written value must meet, for people.",
    },
    "catalog_url": {**_NULLABLE["str"], "description": "Where the vocabulary of the field is listed."},
    "public": {"type": "boolean", "description": "Part of the public visitor config."},
    "profile_overridable": {"type": "boolean", "description": "May be overridden in `device_profiles`."},
    "localization_policy": {"type": "boolean", "description": "One of the six localization-policy fields."},
    "items": {**_NULLABLE["obj"], "description": "Arrays: the schema of an item."},
    "properties": {**_NULLABLE["obj"], "description": "device_profiles: per device, the overridable members."},
    "keys": {**_NULLABLE["obj"], "description": "translation matrix: the locale keys."},
    "values": {**_NULLABLE["obj"], "description": "translation matrix: the texts of one locale."},
    "aliases": {
        **_NULLABLE["arr"],
        "items": {
            "type": "object",
            "properties": {
                "value": {"description": "The alias value accepted."},
                "means": {"description": "The value it stands for."},
            },
            "required": ["value", "means"],
        },
        "description": "`[{value, means}]`: accepted alias values.",
    },
}


def field_description_schema() -> dict:
    members = list(settings_schema.FIELDS["widget_name"].describe(settings_schema.Context()))
    missing = set(members) ^ set(_MEMBER_SCHEMAS)
    assert not missing, f"field description members out of sync: {missing}"
    return {"type": "object", "required": members, "properties": _MEMBER_SCHEMAS}


class SettingsSchemaDocExtension(OpenApiSerializerExtension):
    target_class = "apps.widget.api.serializers.SettingsSchemaDoc"

    def get_name(self, auto_schema, direction):
        return "WidgetSettingsSchema"

    def map_serializer(self, auto_schema, direction):
        return {
            "type": "object",
            "required": ["schema_version", "fields"],
            "properties": {
                "schema_version": {"type": "integer", "description": "Changes whenever the definition changes."},
                "fields": {
                    "type": "object",
                    "description": "Every settings field by name, read-only members included.",
                    "additionalProperties": field_description_schema(),
                },
            },
        }
