"""`rating_mode`, `rating_scale` and `rating_prompt_i18n` in GET/PATCH /v1/widget/settings and the
schema (product-decisions.md, "Ratings (CSAT) settings")."""

import pytest

from apps.widget.tests.conftest import SCHEMA, SETTINGS, patch
from tests.support.plugin import assert_problem

pytestmark = pytest.mark.django_db

LANGUAGES = ("ru", "en", "el", "de", "es", "ar", "zh")


def test_defaults(api):
    data = api().get(SETTINGS).json()["data"]
    assert (data["rating_mode"], data["rating_scale"], data["rating_prompt_i18n"]) == ("on_request", "five", {})


@pytest.mark.parametrize("mode", ["on_request", "after_close", "off"])
def test_each_mode_is_stored(api, mode):
    assert patch(api(), {"rating_mode": mode}).json()["data"]["rating_mode"] == mode


@pytest.mark.parametrize("scale", ["five", "thumbs"])
def test_each_scale_is_stored(api, scale):
    assert patch(api(), {"rating_scale": scale}).json()["data"]["rating_scale"] == scale


@pytest.mark.parametrize(
    "name, value",
    [
        ("rating_mode", "always"),
        ("rating_mode", ""),
        ("rating_mode", 1),
        ("rating_scale", "ten"),
        ("rating_scale", True),
        ("rating_prompt_i18n", "Rate us"),
        ("rating_prompt_i18n", ["en"]),
    ],
)
def test_bad_values_are_422_naming_the_field(api, name, value):
    client = api()
    body = assert_problem(patch(client, {name: value}), 422)
    assert list(body["errors"]) == [name]
    assert client.get(SETTINGS).json()["data"]["rating_mode"] == "on_request"


def test_a_map_of_another_json_type_is_named_in_plain_words(api):
    body = assert_problem(patch(api(), {"rating_prompt_i18n": ["en"]}), 422)
    assert body["errors"]["rating_prompt_i18n"] == ["Must be a JSON object; other types are never coerced."]


def test_a_prompt_per_language_for_all_seven(api):
    prompts = {lang: f"Rate us ({lang})" for lang in LANGUAGES}
    assert patch(api(), {"rating_prompt_i18n": prompts}).json()["data"]["rating_prompt_i18n"] == prompts


def test_prompt_lengths_1_and_200_are_accepted(api):
    prompts = {"en": "x", "ru": "я" * 200}
    assert patch(api(), {"rating_prompt_i18n": prompts}).json()["data"]["rating_prompt_i18n"] == prompts


@pytest.mark.parametrize(
    "prompts, path",
    [
        ({"en": ""}, "rating_prompt_i18n.en"),
        ({"en": "x" * 201}, "rating_prompt_i18n.en"),
        ({"en": "   "}, "rating_prompt_i18n.en"),
        ({"en": 5}, "rating_prompt_i18n.en"),
        ({"en": None}, "rating_prompt_i18n.en"),
        ({"fr": "Notez-nous"}, "rating_prompt_i18n.fr"),
        ({"EN": "Rate"}, "rating_prompt_i18n.EN"),
    ],
)
def test_bad_prompts_are_422_at_their_path_and_change_nothing(api, prompts, path):
    client = api()
    patch(client, {"rating_prompt_i18n": {"de": "Bewerten Sie uns"}})
    body = assert_problem(patch(client, {"rating_prompt_i18n": {"ru": "Оцените", **prompts}}), 422)
    assert list(body["errors"]) == [path]
    assert client.get(SETTINGS).json()["data"]["rating_prompt_i18n"] == {"de": "Bewerten Sie uns"}


def test_a_write_replaces_the_whole_map(api):
    client = api()
    patch(client, {"rating_prompt_i18n": {"de": "Bewerten", "en": "Rate"}})
    data = patch(client, {"rating_prompt_i18n": {"ru": "Оцените"}}).json()["data"]
    assert data["rating_prompt_i18n"] == {"ru": "Оцените"}


@pytest.mark.parametrize("empty", [{}, None])
def test_an_empty_map_or_null_clears_it(api, empty):
    client = api()
    patch(client, {"rating_prompt_i18n": {"en": "Rate"}})
    assert patch(client, {"rating_prompt_i18n": empty}).json()["data"]["rating_prompt_i18n"] == {}


def test_the_schema_describes_the_three_fields(api):
    fields = api(scopes=["widget:read"]).get(SCHEMA).json()["data"]["fields"]
    assert fields["rating_mode"]["enum"] == ["on_request", "after_close", "off"]
    assert fields["rating_mode"]["default"] == "on_request"
    assert fields["rating_scale"]["enum"] == ["five", "thumbs"]
    prompts = fields["rating_prompt_i18n"]
    assert prompts["type"] == "language_texts" and prompts["patch"] == "replace_whole" and prompts["default"] == {}
    assert prompts["keys"]["enum"] == list(LANGUAGES)
    assert (prompts["values"]["min_length"], prompts["values"]["max_length"]) == (1, 200)
