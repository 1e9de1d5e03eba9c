"""GET and PUT /v1/widget/language."""

import pytest

from apps.widget.tests.conftest import LANGUAGE, SETTINGS, idem
from tests.support.plugin import assert_problem

pytestmark = pytest.mark.django_db


def put(client, body, **headers):
    return client.put(LANGUAGE, body, format="json", **{**idem(), **headers})


def test_new_widget_language_is_the_implicit_auto(api):
    data = api(scopes=["widget:read"]).get(LANGUAGE).json()["data"]
    assert data == {"widget_default_language": "auto", "is_default": True, "effective_language": "en"}


def test_legacy_widget_language_is_the_implicit_ru(api, legacy_widget):
    data = api(w=legacy_widget).get(LANGUAGE).json()["data"]
    assert data == {"widget_default_language": "ru", "is_default": True, "effective_language": "ru"}


def test_auto_resolves_to_the_fallback_language_without_a_visitor(api):
    client = api()
    client.patch(SETTINGS, {"widget_fallback_language": "de"}, format="json", **idem())
    assert client.get(LANGUAGE).json()["data"]["effective_language"] == "de"


def test_put_sets_the_language(api):
    client = api()
    response = put(client, {"widget_default_language": "el"})
    assert response.status_code == 200, response.content
    assert response.json()["data"] == {"widget_default_language": "el", "is_default": False, "effective_language": "el"}
    assert client.get(SETTINGS).json()["data"]["widget_default_language"] == "el"


def test_put_of_the_default_value_stores_it_explicitly(api):
    data = put(api(), {"widget_default_language": "auto"}).json()["data"]
    assert data["is_default"] is False and data["widget_default_language"] == "auto"


def test_put_purges_the_served_cache(api, widget, purges):
    put(api(), {"widget_default_language": "zh"})
    assert widget.pk in purges


def test_put_moves_the_policy_revision(api):
    client = api()
    put(client, {"widget_default_language": "ar"})
    assert client.get(SETTINGS).json()["data"]["widget_language_policy_revision"] == 1


@pytest.mark.parametrize(
    "body, key",
    [
        ({"widget_default_language": None}, "widget_default_language"),
        ({"widget_default_language": "fr"}, "widget_default_language"),
        ({"widget_default_language": 1}, "widget_default_language"),
        ({}, "widget_default_language"),
        ({"widget_default_language": "ru", "extra": 1}, "extra"),
    ],
)
def test_put_refuses_invalid_bodies(api, widget, purges, body, key):
    errors = assert_problem(put(api(), body), 422)["errors"]
    assert key in errors
    assert purges == []


def test_put_needs_an_idempotency_key(api):
    assert_problem(
        api().put(LANGUAGE, {"widget_default_language": "ru"}, format="json"), 400, "idempotency_key_missing"
    )


def test_put_refuses_a_non_json_body(api):
    assert_problem(api().put(LANGUAGE, "ru", content_type="text/plain", **idem()), 415)


def test_language_scopes(api):
    assert_problem(api(scopes=["widget:write"]).get(LANGUAGE), 403, "missing_scope")
    assert_problem(put(api(scopes=["widget:read"]), {"widget_default_language": "ru"}), 403, "missing_scope")
