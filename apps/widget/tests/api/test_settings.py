"""GET and PATCH /v1/widget/settings: the PATCH rules of the spec, one rule per test."""

import pytest

from apps.widget import settings_schema as schema
from apps.widget.models import WidgetSettings
from apps.widget.tests.conftest import SCHEMA, SETTINGS, idem, patch
from tests.support.plugin import assert_problem

pytestmark = pytest.mark.django_db


def stored(widget) -> dict:
    row = WidgetSettings.objects.filter(widget=widget).first()
    return row.values if row else {}


def get(client) -> dict:
    response = client.get(SETTINGS)
    assert response.status_code == 200, response.content
    return response.json()["data"]


# --- GET -----------------------------------------------------------------------------------------------


def test_get_shows_every_field_the_schema_lists_with_its_effective_default(api):
    # given a widget that never wrote its settings
    client = api(scopes=["widget:read"])
    fields = client.get(SCHEMA).json()["data"]["fields"]
    # when
    data = get(client)
    # then
    assert list(data) == list(fields)
    for name, member in fields.items():
        if not member["read_only"]:
            assert data[name] == member["effective_default"], name


def test_get_read_only_members(api, widget):
    data = get(api(scopes=["widget:read"]))
    assert data["widget_id"] == widget.pk
    assert data["api_enabled"] is True
    assert data["widget_language_policy_revision"] == data["widget_translation_revision"] == 0
    status = data["widget_translation_status"]
    assert status["available"] is True and status["enabled"] is False and status["reason"] is None
    assert status["revision"] == 0
    assert sum(status["counts"].values()) == status["total"]
    assert status["counts"]["ready"] == status["counts"]["pending"] == status["counts"]["failed"] == 0
    assert data["updated_at"] == widget.created_at.isoformat()


def test_new_widget_implicit_localization_defaults(api):
    data = get(api())
    assert data["widget_default_language"] == "auto"
    assert data["widget_supported_languages"] == ["ru", "en"]
    assert data["widget_fallback_language"] == "en"
    assert data["widget_auto_translate_custom_texts"] is False


def test_legacy_widget_implicit_localization_defaults(api, legacy_widget):
    data = get(api(w=legacy_widget))
    assert data["widget_default_language"] == "ru"
    assert data["widget_supported_languages"] == ["ru", "en"]
    assert data["widget_fallback_language"] == "ru"
    assert data["widget_auto_translate_custom_texts"] is False


def test_get_needs_widget_read(api, client):
    assert_problem(api(scopes=["widget:write"]).get(SETTINGS), 403, "missing_scope")
    assert_problem(client.get(SETTINGS), 401)


# --- PATCH: writes ------------------------------------------------------------------------------------------


def test_patch_stores_only_the_sent_keys_and_answers_the_settings(api, widget):
    response = patch(api(), {"widget_color_primary": "#112233", "widget_offset_x": 40})
    assert response.status_code == 200, response.content
    data = response.json()["data"]
    assert data["widget_color_primary"] == "#112233" and data["widget_offset_x"] == 40
    assert stored(widget) == {"widget_color_primary": "#112233", "widget_offset_x": 40}


def test_patch_is_merge_safe_fields_not_sent_keep_their_values(api, widget):
    client = api()
    patch(client, {"widget_position": "bottom_left"})
    patch(client, {"widget_theme": "dark"})
    data = get(client)
    assert data["widget_position"] == "bottom_left" and data["widget_theme"] == "dark"


def test_patch_needs_widget_write(api):
    assert_problem(patch(api(scopes=["widget:read"]), {"widget_theme": "dark"}), 403, "missing_scope")


def test_patch_needs_an_idempotency_key_and_refuses_its_reuse(api):
    client = api()
    assert_problem(client.patch(SETTINGS, {"widget_theme": "dark"}, format="json"), 400, "idempotency_key_missing")
    headers = idem()
    assert client.patch(SETTINGS, {"widget_theme": "dark"}, format="json", **headers).status_code == 200
    assert_problem(
        client.patch(SETTINGS, {"widget_theme": "light"}, format="json", **headers), 409, "idempotency_key_reused"
    )
    assert get(client)["widget_theme"] == "dark"


def test_a_refused_patch_releases_its_idempotency_key(api):
    client = api()
    headers = idem()
    assert_problem(client.patch(SETTINGS, {"widget_theme": "sepia"}, format="json", **headers), 422)
    assert client.patch(SETTINGS, {"widget_theme": "dark"}, format="json", **headers).status_code == 200


def test_patch_refuses_a_non_json_body(api):
    response = api().patch(SETTINGS, "widget_theme=dark", content_type="application/x-www-form-urlencoded", **idem())
    assert_problem(response, 415)


def test_patch_body_must_be_an_object(api):
    body = assert_problem(patch(api(), ["widget_theme"]), 422, "validation_failed")
    assert body["errors"] == {"body": ["Expected a JSON object of settings fields."]}


def test_empty_patch_changes_nothing(api, widget):
    response = patch(api(), {})
    assert response.status_code == 200
    assert stored(widget) == {}


def test_updated_at_moves_on_a_write(api, widget):
    client = api()
    before = get(client)["updated_at"]
    after = patch(client, {"widget_theme": "dark"}).json()["data"]["updated_at"]
    assert after > before


# --- PATCH: nothing is dropped silently -----------------------------------------------------------------


def test_invalid_input_is_422_and_nothing_is_stored(api, widget):
    body = assert_problem(patch(api(), {"widget_theme": "dark", "widget_offset_x": 9999}), 422, "validation_failed")
    assert list(body["errors"]) == ["widget_offset_x"]
    assert stored(widget) == {}


def test_unknown_member_is_422_naming_it(api, widget):
    body = assert_problem(patch(api(), {"widget_colour": "#000000"}), 422)
    assert list(body["errors"]) == ["widget_colour"]
    assert stored(widget) == {}


@pytest.mark.parametrize("name", ["messengers", "ai", "map", "price_list", "logo", "quick_phrases"])
def test_subtrees_outside_the_settings_are_refused_by_name(api, widget, name):
    body = assert_problem(patch(api(), {name: {"anything": 1}}), 422)
    assert list(body["errors"]) == [name]
    assert "not" in body["errors"][name][0].lower()
    assert stored(widget) == {}


@pytest.mark.parametrize("name", schema.READ_ONLY)
def test_read_only_member_is_422_naming_it(api, widget, name):
    current = get(api())[name]
    body = assert_problem(patch(api(), {name: current}), 422)
    assert body["errors"] == {name: ["Read-only field; it cannot be written."]}


@pytest.mark.parametrize(
    "name, value",
    [
        ("widget_button_size", "75"),
        ("widget_button_size", 75.0),
        ("widget_button_size", True),
        ("widget_offset_x", "20"),
        ("widget_show_rating", 1),
        ("widget_show_rating", "true"),
        ("widget_color_primary", 1122867),
        ("widget_supported_languages", "ru"),
    ],
)
def test_types_are_strict_never_coerced(api, widget, name, value):
    body = assert_problem(patch(api(), {name: value}), 422)
    assert list(body["errors"]) == [name]


@pytest.mark.parametrize("size", [50, 75, 100])
def test_button_size_allows_50_75_100(api, size):
    assert patch(api(), {"widget_button_size": size}).json()["data"]["widget_button_size"] == size


@pytest.mark.parametrize("size", [0, 49, 60, 101])
def test_other_button_sizes_are_refused(api, size):
    assert list(assert_problem(patch(api(), {"widget_button_size": size}), 422)["errors"]) == ["widget_button_size"]


# --- PATCH: null ----------------------------------------------------------------------------------------------


def test_explicit_null_removes_the_stored_key_and_the_default_applies(api, widget):
    client = api()
    patch(client, {"widget_offset_y": 77, "widget_theme": "dark"})
    data = patch(client, {"widget_offset_y": None}).json()["data"]
    assert data["widget_offset_y"] == schema.FIELDS["widget_offset_y"].default
    assert stored(widget) == {"widget_theme": "dark"}


@pytest.mark.parametrize(
    "name", [n for n in schema.WRITABLE if n.startswith("widget_show_") and n not in schema.POLICY_FIELDS]
)
def test_show_toggles_default_on_when_cleared(api, name):
    client = api()
    assert patch(client, {name: False}).json()["data"][name] is False
    assert patch(client, {name: None}).json()["data"][name] is True


@pytest.mark.parametrize("name", schema.POLICY_FIELDS)
def test_the_six_localization_policy_fields_refuse_null(api, widget, name):
    body = assert_problem(patch(api(), {name: None}), 422)
    assert list(body["errors"]) == [name]
    assert "null" in body["errors"][name][0]


def test_there_are_six_policy_fields():
    assert set(schema.POLICY_FIELDS) == {
        "widget_default_language",
        "widget_supported_languages",
        "widget_fallback_language",
        "widget_auto_translate_custom_texts",
        "widget_content_source_language",
        "widget_show_lang_switcher",
    }


def test_texts_clear_to_the_catalogue_text(api):
    client = api()
    assert patch(client, {"widget_greeting": "Hi!\nHow can we help?"}).json()["data"]["widget_greeting"] == (
        "Hi!\nHow can we help?"
    )
    assert patch(client, {"widget_greeting": None}).json()["data"]["widget_greeting"] is None


@pytest.mark.parametrize("value", ["", "   ", "a\x00b", "line\nbreak", "x" * 61])
def test_single_line_texts_refuse_blank_controls_breaks_and_overlong(api, value):
    assert list(assert_problem(patch(api(), {"widget_name": value}), 422)["errors"]) == ["widget_name"]


# --- icon ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("value, read_back", [(True, "spin"), (False, "static"), ("spiral", "spiral")])
def test_icon_motion_boolean_aliases(api, value, read_back):
    assert patch(api(), {"icon_custom_animated": value}).json()["data"]["icon_custom_animated"] == read_back


def test_icon_preset_accepts_a_catalogue_preset(api):
    assert patch(api(), {"icon_preset": "headset"}).json()["data"]["icon_preset"] == "headset"


@pytest.mark.parametrize("value", ["custom:999999", "custom:0", "rocket", "custom:abc"])
def test_icon_preset_refuses_unknown_presets_and_files(api, value):
    assert list(assert_problem(patch(api(), {"icon_preset": value}), 422)["errors"]) == ["icon_preset"]


def test_icon_preset_refuses_another_widgets_icon(api, other_widget):
    from apps.widget import services
    from apps.widget.icons import inspect_icon
    from apps.widget.tests.images import png

    content = png()
    icon = services.add_icon(
        widget=other_widget, content=content, original_name="a.png", info=inspect_icon(content, name="a.png")
    )
    assert_problem(patch(api(), {"icon_preset": f"custom:{icon.file_id}"}), 422)


# --- skins and plans ------------------------------------------------------------------------------------------


def test_a_premium_skin_is_refused_on_the_free_plan(api):
    body = assert_problem(patch(api(), {"widget_skin": "glass"}), 422)
    assert "plan" in body["errors"]["widget_skin"][0]


def test_a_premium_skin_is_accepted_when_the_plan_includes_it(api, monkeypatch):
    from apps.widget import services

    monkeypatch.setattr(services, "plan_features", lambda widget: {"plan": "pro", "premium_skins": True})
    assert patch(api(), {"widget_skin": "glass"}).json()["data"]["widget_skin"] == "glass"


# --- device_profiles --------------------------------------------------------------------------------------------


def profiles(client) -> dict:
    return get(client)["device_profiles"]


def test_device_profiles_store_sparse_overrides(api, widget):
    data = patch(api(), {"device_profiles": {"mobile": {"widget_button_size": 50}}}).json()["data"]
    assert data["device_profiles"] == {"mobile": {"widget_button_size": 50}}
    assert data["widget_button_size"] == 75  # the base value is untouched


def test_device_profiles_omission_preserves(api):
    client = api()
    patch(client, {"device_profiles": {"mobile": {"widget_button_size": 50}}})
    patch(client, {"device_profiles": {"desktop": {"widget_position": "bottom_left"}}})
    patch(client, {"device_profiles": {"mobile": {"widget_offset_x": 5}}})
    assert profiles(client) == {
        "mobile": {"widget_button_size": 50, "widget_offset_x": 5},
        "desktop": {"widget_position": "bottom_left"},
    }


def test_device_profiles_leaf_null_removes_that_override(api):
    client = api()
    patch(client, {"device_profiles": {"mobile": {"widget_button_size": 50, "widget_offset_x": 5}}})
    patch(client, {"device_profiles": {"mobile": {"widget_offset_x": None}}})
    assert profiles(client) == {"mobile": {"widget_button_size": 50}}


def test_device_profiles_device_null_removes_that_profile(api):
    client = api()
    patch(client, {"device_profiles": {"mobile": {"widget_button_size": 50}, "desktop": {"widget_offset_y": 1}}})
    patch(client, {"device_profiles": {"mobile": None}})
    assert profiles(client) == {"desktop": {"widget_offset_y": 1}}


def test_device_profiles_root_null_removes_every_profile(api, widget):
    client = api()
    patch(client, {"device_profiles": {"mobile": {"widget_button_size": 50}, "desktop": {"widget_offset_y": 1}}})
    patch(client, {"device_profiles": None})
    assert profiles(client) == {}
    assert "device_profiles" not in stored(widget)


def test_device_profiles_enabled_false_keeps_the_data(api):
    client = api()
    patch(client, {"device_profiles": {"mobile": {"widget_button_size": 50}}})
    patch(client, {"device_profiles": {"mobile": {"enabled": False}}})
    assert profiles(client) == {"mobile": {"widget_button_size": 50, "enabled": False}}
    patch(client, {"device_profiles": {"mobile": {"enabled": True}}})
    assert profiles(client) == {"mobile": {"widget_button_size": 50, "enabled": True}}


def test_a_disabled_profile_renders_with_the_base_settings(api, widget):
    from apps.widget import selectors

    client = api()
    patch(client, {"device_profiles": {"mobile": {"widget_button_size": 50}, "desktop": {"widget_offset_x": 9}}})
    patch(client, {"device_profiles": {"mobile": {"enabled": False}}})
    rendered = selectors.public_config(widget=widget)["settings"]["device_profiles"]
    assert rendered == {"desktop": {"widget_offset_x": 9}}


@pytest.mark.parametrize(
    "body, path",
    [
        ({"mobile": {"widget_offset_x": -1}}, "device_profiles.mobile.widget_offset_x"),
        ({"mobile": {"widget_button_size": 60}}, "device_profiles.mobile.widget_button_size"),
        ({"desktop": {"enabled": "no"}}, "device_profiles.desktop.enabled"),
        ({"mobile": {"widget_color_primary": "#000000"}}, "device_profiles.mobile.widget_color_primary"),
        ({"tablet": {"widget_offset_x": 1}}, "device_profiles.tablet"),
        ({"mobile": [1]}, "device_profiles.mobile"),
    ],
)
def test_device_profiles_errors_are_keyed_by_dotted_path(api, widget, body, path):
    errors = assert_problem(patch(api(), {"device_profiles": body}), 422)["errors"]
    assert list(errors) == [path]
    assert stored(widget) == {}


def test_device_profiles_must_be_an_object(api):
    assert list(assert_problem(patch(api(), {"device_profiles": []}), 422)["errors"]) == ["device_profiles"]


# --- widget_text_translations ----------------------------------------------------------------------------------


def matrix(client) -> dict:
    return get(client)["widget_text_translations"]


def test_translations_replace_the_whole_matrix(api):
    client = api()
    patch(client, {"widget_text_translations": {"en": {"widget_name": "Support", "widget_signature": "Online"}}})
    patch(client, {"widget_text_translations": {"ru": {"widget_greeting": "Привет"}}})
    assert matrix(client) == {"ru": {"widget_greeting": "Привет"}}


@pytest.mark.parametrize("empty", [{}, None])
def test_an_empty_matrix_or_null_clears_it(api, widget, empty):
    client = api()
    patch(client, {"widget_text_translations": {"en": {"widget_name": "Support"}}})
    assert matrix(api()) != {}
    patch(client, {"widget_text_translations": empty})
    assert matrix(client) == {}
    assert "widget_text_translations" not in stored(widget)


def test_translations_are_limited_to_name_signature_and_greeting(api):
    body = {"widget_text_translations": {"en": {"widget_name": "Hi", "widget_input_placeholder": "Type"}}}
    errors = assert_problem(patch(api(), body), 422)["errors"]
    assert list(errors) == ["widget_text_translations.en.widget_input_placeholder"]


def test_translations_are_keyed_by_enabled_locales(api):
    errors = assert_problem(patch(api(), {"widget_text_translations": {"de": {"widget_name": "Hallo"}}}), 422)["errors"]
    assert list(errors) == ["widget_text_translations.de"]


def test_enabling_a_locale_in_the_same_patch_allows_its_translations(api):
    response = patch(
        api(),
        {
            "widget_supported_languages": ["ru", "en", "de"],
            "widget_text_translations": {"de": {"widget_name": "Hallo"}},
        },
    )
    assert response.status_code == 200, response.content
    assert response.json()["data"]["widget_text_translations"] == {"de": {"widget_name": "Hallo"}}


def test_disabling_a_locale_that_has_translations_is_refused(api, widget):
    client = api()
    patch(client, {"widget_text_translations": {"en": {"widget_name": "Support"}}})
    errors = assert_problem(patch(client, {"widget_supported_languages": ["ru"]}), 422)["errors"]
    assert list(errors) == ["widget_supported_languages"]
    assert get(client)["widget_supported_languages"] == ["ru", "en"]


@pytest.mark.parametrize(
    "value, path",
    [
        ({"fr": {"widget_name": "Salut"}}, "widget_text_translations.fr"),
        ({"en": {}}, "widget_text_translations.en"),
        ({"en": {"widget_name": ""}}, "widget_text_translations.en.widget_name"),
        ({"en": {"widget_name": None}}, "widget_text_translations.en.widget_name"),
        ({"en": "Support"}, "widget_text_translations.en"),
        ("Support", "widget_text_translations"),
    ],
)
def test_translation_errors_are_keyed_by_dotted_path(api, value, path):
    assert list(assert_problem(patch(api(), {"widget_text_translations": value}), 422)["errors"]) == [path]


# --- revisions ---------------------------------------------------------------------------------------------------


def test_a_policy_change_increments_the_language_policy_revision_and_its_alias(api):
    client = api()
    data = patch(client, {"widget_fallback_language": "de"}).json()["data"]
    assert data["widget_language_policy_revision"] == data["widget_translation_revision"] == 1
    assert data["widget_translation_status"]["revision"] == 1
    data = patch(client, {"widget_text_translations": {"en": {"widget_name": "Support"}}}).json()["data"]
    assert data["widget_language_policy_revision"] == 2


def test_other_changes_and_unchanged_values_keep_the_revision(api):
    client = api()
    assert patch(client, {"widget_theme": "dark"}).json()["data"]["widget_language_policy_revision"] == 0
    # the implicit default written explicitly changes no effective value
    assert patch(client, {"widget_fallback_language": "en"}).json()["data"]["widget_language_policy_revision"] == 0


# --- the served cache ----------------------------------------------------------------------------------------


def test_every_successful_patch_purges_the_served_cache(api, widget, purges):
    patch(api(), {"widget_theme": "dark"})
    assert widget.pk in purges


def test_an_empty_patch_also_purges(api, widget, purges):
    patch(api(), {})
    assert widget.pk in purges


def test_a_refused_patch_does_not_purge(api, purges):
    assert_problem(patch(api(), {"widget_theme": 1}), 422)
    assert purges == []
