"""The one definition: its shape, its published forms (schema endpoint, OpenAPI) and its version."""

import re

import pytest
from django.test import override_settings
from drf_spectacular.generators import SchemaGenerator

from apps.widget import settings_schema as definition
from apps.widget.tests.strategies import python_pattern

# Bump SCHEMA_VERSION and this pin together whenever a field, constraint or default changes.
PINNED = (4, "eab573c3acbe4979fa2a92d5e73336055dd36c9d0a33958a4904b8b091f241e7")


def test_a_changed_definition_bumps_the_schema_version():
    assert (definition.SCHEMA_VERSION, definition.definition_digest()) == PINNED, (
        "the settings definition changed: bump SCHEMA_VERSION and update PINNED"
    )


def test_a_real_widgets_field_set():
    assert 40 <= len(definition.WRITABLE) <= 70
    spec_named = {
        "widget_position",
        "widget_offset_x",
        "widget_offset_y",
        "widget_chat_offset_x",
        "widget_chat_offset_y",
        "widget_button_size",
        "icon_preset",
        "icon_custom_animated",
        "operators_display_mode",
        "device_profiles",
        "widget_default_language",
        "widget_supported_languages",
        "widget_fallback_language",
        "widget_auto_translate_custom_texts",
        "widget_content_source_language",
        "widget_text_translations",
        "widget_show_lang_switcher",
        "require_2fa",
    }
    assert spec_named <= set(definition.WRITABLE)
    assert [n for n in definition.FIELDS if n.startswith("widget_show_")]


def test_every_description_has_the_same_members():
    ctx = definition.Context()
    shapes = {tuple(f.describe(ctx)) for f in definition.FIELDS.values()}
    assert len(shapes) == 1
    members = set(shapes.pop())
    assert {
        "validation_rules",
        "accepted_types",
        "accepted_values",
        "enum",
        "minimum",
        "maximum",
        "strict_json_type",
        "pattern",
        "default_semantics",
        "effective_default",
        "catalog_url",
        "read_only",
        "patch",
        "default",
    } <= members


@pytest.mark.parametrize("name", list(definition.FIELDS))
def test_patterns_are_pcre_with_delimiters_and_match_like_the_server(name):
    member = definition.FIELDS[name].describe(definition.Context())
    if member["pattern"] is None:
        return
    assert re.fullmatch(r"/\\A\(\?:.*\)\\z/u", member["pattern"], re.S)
    assert python_pattern(member["pattern"]) == definition.FIELDS[name].python_pattern()


@pytest.mark.parametrize("name", definition.WRITABLE)
def test_every_default_passes_its_own_validation(name):
    field = definition.FIELDS[name]
    for generation in definition.GENERATIONS:
        ctx = definition.Context(generation=generation)
        default = field.default_for(generation)
        if default is None:
            assert field.nullable, name
            continue
        errors = {}
        assert field.parse(default, ctx, name, errors) is not definition.INVALID, errors


def test_only_localization_defaults_depend_on_the_widget_generation():
    differing = {n for n, f in definition.FIELDS.items() if f.default_for("legacy") != f.default_for("new")}
    assert differing == {"widget_default_language", "widget_fallback_language"}
    assert definition.FIELDS["widget_default_language"].default_for("legacy") == "ru"
    assert definition.FIELDS["widget_fallback_language"].default_for("legacy") == "ru"


def test_show_toggles_default_on():
    for name, field in definition.FIELDS.items():
        if name.startswith("widget_show_"):
            assert field.default is True and field.legacy_default is True, name


def test_openapi_objects_come_from_the_definition():
    assert list(definition.openapi_object(write=False)["properties"]) == list(definition.FIELDS)
    assert list(definition.openapi_object(write=True)["properties"]) == list(definition.WRITABLE)


@pytest.mark.django_db
def test_the_openapi_document_describes_the_definition(settings):
    settings.ROOT_URLCONF = "apps.widget.tests.urls"
    with override_settings(SCHEMA_INCLUDE_TEST_ROUTES=False):
        doc = SchemaGenerator().get_schema(request=None, public=True)
    schemas = doc["components"]["schemas"]
    assert list(schemas["WidgetSettings"]["properties"]) == list(definition.FIELDS)
    assert list(schemas["PatchedWidgetSettingsRequest"]["properties"]) == list(definition.WRITABLE)
    assert schemas["PatchedWidgetSettingsRequest"]["additionalProperties"] is False
    patch = doc["paths"]["/api/v1/widget/settings"]["patch"]
    assert patch["x-idempotency"] == "required" and patch["x-scopes"] == ["widget:write"]
    for path, method in [
        ("/api/v1/widget/language", "put"),
        ("/api/v1/widget/icons", "post"),
        ("/api/v1/widget/cache/purge", "post"),
    ]:
        assert doc["paths"][path][method]["x-idempotency"] == "required", path
    for path in (
        "/api/v1/widget/settings",
        "/api/v1/widget/settings/schema",
        "/api/v1/widget/language",
        "/api/v1/widget/skins",
        "/api/v1/widget/icons",
        "/api/v1/widget/embed",
    ):
        assert doc["paths"][path]["get"]["x-scopes"] == ["widget:read"]
