"""The `prechat` setting in GET/PATCH /v1/widget/settings, the schema route and the visitor config
(product-decisions.md, "Pre-chat form")."""

import pytest

from apps.widget.tests.conftest import SCHEMA, SETTINGS, patch
from tests.support.plugin import assert_problem

pytestmark = pytest.mark.django_db

DEFAULT = {"when": "never", "fields": []}


def _field(key="company", type="text", **extra):
    return {"key": key, "type": type, "label_i18n": {"en": key.title()}, **extra}


FORM = {
    "when": "always",
    "fields": [
        {"key": "name", "type": "text", "label_i18n": {"en": "Name", "ar": "الاسم"}, "required": True},
        {"key": "email", "type": "email", "label_i18n": {"en": "E-mail"}, "required": False},
        {
            "key": "plan",
            "type": "select",
            "label_i18n": {"en": "Plan"},
            "required": True,
            "options": [
                {"value": "free", "label_i18n": {"en": "Free"}},
                {"value": "pro", "label_i18n": {"en": "Pro", "de": "Profi"}},
            ],
        },
        {"key": "consent", "type": "checkbox", "label_i18n": {"en": "I agree"}, "required": True},
    ],
}


def test_the_default_is_no_form(api):
    assert api().get(SETTINGS).json()["data"]["prechat"] == DEFAULT


def test_a_form_is_stored_and_read_back_with_required_filled_in(api):
    client = api()
    form = {"when": "offline", "fields": [_field("company"), _field("phone", "phone", required=True)]}
    stored = patch(client, {"prechat": form}).json()["data"]["prechat"]
    assert stored["when"] == "offline"
    assert stored["fields"][0] == {**_field("company"), "required": False}
    assert client.get(SETTINGS).json()["data"]["prechat"] == stored


def test_every_type_and_the_full_form_are_accepted(api):
    assert patch(api(), {"prechat": FORM}).json()["data"]["prechat"]["fields"][2]["options"][1]["value"] == "pro"


def test_null_brings_back_the_default(api):
    client = api()
    patch(client, {"prechat": FORM})
    assert patch(client, {"prechat": None}).json()["data"]["prechat"] == DEFAULT


def test_ten_fields_are_accepted(api):
    form = {"when": "always", "fields": [_field(f"f{n}") for n in range(10)]}
    assert len(patch(api(), {"prechat": form}).json()["data"]["prechat"]["fields"]) == 10


@pytest.mark.parametrize(
    "value, path",
    [
        ("always", "prechat"),
        ({"fields": []}, "prechat.when"),
        ({"when": "sometimes", "fields": []}, "prechat.when"),
        ({"when": "never", "fields": [], "title": "x"}, "prechat.title"),
        ({"when": "always", "fields": []}, "prechat.fields"),
        ({"when": "always", "fields": {}}, "prechat.fields"),
        ({"when": "always", "fields": [_field(f"f{n}") for n in range(11)]}, "prechat.fields"),
        ({"when": "always", "fields": ["company"]}, "prechat.fields.0"),
        ({"when": "always", "fields": [{"type": "text", "label_i18n": {"en": "A"}}]}, "prechat.fields.0.key"),
        ({"when": "always", "fields": [_field("Company")]}, "prechat.fields.0.key"),
        ({"when": "always", "fields": [_field("a" * 41)]}, "prechat.fields.0.key"),
        ({"when": "always", "fields": [_field("my-key")]}, "prechat.fields.0.key"),
        ({"when": "always", "fields": [{**_field(), "key": 5}]}, "prechat.fields.0.key"),
        ({"when": "always", "fields": [_field("a"), _field("b"), _field("a")]}, "prechat.fields.2.key"),
        ({"when": "always", "fields": [_field(type="date")]}, "prechat.fields.0.type"),
        ({"when": "always", "fields": [{"key": "a", "label_i18n": {"en": "A"}}]}, "prechat.fields.0.type"),
        ({"when": "always", "fields": [_field("email", "text")]}, "prechat.fields.0.type"),
        ({"when": "always", "fields": [_field("phone", "number")]}, "prechat.fields.0.type"),
        ({"when": "always", "fields": [{"key": "a", "type": "text"}]}, "prechat.fields.0.label_i18n"),
        ({"when": "always", "fields": [{**_field(), "label_i18n": {}}]}, "prechat.fields.0.label_i18n"),
        ({"when": "always", "fields": [{**_field(), "label_i18n": "Company"}]}, "prechat.fields.0.label_i18n"),
        (
            {"when": "always", "fields": [{**_field(), "label_i18n": {"fr": "Société"}}]},
            "prechat.fields.0.label_i18n.fr",
        ),
        ({"when": "always", "fields": [{**_field(), "label_i18n": {"en": "  "}}]}, "prechat.fields.0.label_i18n.en"),
        ({"when": "always", "fields": [{**_field(), "required": "yes"}]}, "prechat.fields.0.required"),
        ({"when": "always", "fields": [{**_field(), "hint": "x"}]}, "prechat.fields.0.hint"),
        ({"when": "always", "fields": [_field(type="select")]}, "prechat.fields.0.options"),
        ({"when": "always", "fields": [_field(type="select", options=[])]}, "prechat.fields.0.options"),
        (
            {"when": "always", "fields": [_field(options=[{"value": "a", "label_i18n": {"en": "A"}}])]},
            "prechat.fields.0.options",
        ),
        (
            {"when": "always", "fields": [_field(type="select", options=[{"value": "a"}])]},
            "prechat.fields.0.options.0.label_i18n",
        ),
        (
            {"when": "always", "fields": [_field(type="select", options=[{"value": "", "label_i18n": {"en": "A"}}])]},
            "prechat.fields.0.options.0.value",
        ),
        (
            {
                "when": "always",
                "fields": [
                    _field(
                        type="select",
                        options=[{"value": "a", "label_i18n": {"en": "A"}}, {"value": "a", "label_i18n": {"en": "B"}}],
                    )
                ],
            },
            "prechat.fields.0.options.1.value",
        ),
    ],
)
def test_each_bad_form_is_422_at_its_path_and_changes_nothing(api, value, path):
    client = api()
    patch(client, {"prechat": FORM})
    body = assert_problem(patch(client, {"prechat": value}), 422)
    assert list(body["errors"]) == [path], body["errors"]
    assert client.get(SETTINGS).json()["data"]["prechat"]["fields"][0]["key"] == "name"


def test_every_bad_field_is_named_at_once(api):
    form = {"when": "always", "fields": [_field("ok"), _field("Bad"), _field(type="nope")]}
    body = assert_problem(patch(api(), {"prechat": form}), 422)
    assert set(body["errors"]) == {"prechat.fields.1.key", "prechat.fields.2.type"}


def test_the_schema_route_describes_the_form(api):
    described = api().get(SCHEMA).json()["data"]["fields"]["prechat"]
    assert described["type"] == "prechat_form"
    assert described["default"] == DEFAULT
    assert described["patch"] == "replace_whole"
    props = described["properties"]
    assert props["when"]["enum"] == ["never", "always", "offline"]
    assert props["fields"]["max_items"] == 10
    item = props["fields"]["items"]["properties"]
    assert item["type"]["enum"] == ["text", "email", "phone", "number", "select", "checkbox"]
    assert item["key"]["pattern"] == "/\\A(?:[a-z0-9_]{1,40})\\z/u"
    assert item["label_i18n"]["keys"]["enum"] == ["ru", "en", "el", "de", "es", "ar", "zh"]
    assert item["options"]["items"]["required"] == ["value", "label_i18n"]
    assert any("prechat.fields.2.key" in rule for rule in described["validation_rules"])


def test_the_visitor_config_serves_the_form(api, client, widget):
    patch(api(), {"prechat": FORM})
    config = client.get(f"/api/visitor/v1/{widget.button_guid}/config").json()
    assert config["settings"]["prechat"]["fields"][3]["key"] == "consent"
