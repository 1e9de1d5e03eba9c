"""The schema-driven property test: values generated from GET /v1/widget/settings/schema alone.

For every field, values the schema says are valid are accepted by PATCH and read back as the schema
says; values it says are invalid are refused with 422 keyed by the field (dotted inside objects)
and change nothing. Validation, GET and the schema therefore cannot disagree.
"""

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings

from apps.widget import settings_schema as definition
from apps.widget.models import WidgetSettings
from apps.widget.tests import strategies
from apps.widget.tests.conftest import SCHEMA, SETTINGS, patch

pytestmark = pytest.mark.django_db

EXAMPLES = hypothesis_settings(
    max_examples=12,  # per field: about 180 fields, each a PATCH and a GET per example
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
)


@pytest.fixture
def client(api, settings):
    settings.API_RATE_LIMIT_PER_MINUTE = 0  # hundreds of requests per test
    return api()


@pytest.fixture
def fields(client) -> dict:
    response = client.get(SCHEMA)
    assert response.status_code == 200
    return response.json()["data"]["fields"]


def stored(widget) -> dict:
    row = WidgetSettings.objects.filter(widget=widget).first()
    return dict(row.values) if row else {}


def test_the_property_tests_cover_every_field_the_schema_lists(fields):
    assert list(fields) == list(definition.FIELDS)
    assert {n for n, m in fields.items() if not m["read_only"]} == set(definition.WRITABLE)


@pytest.mark.parametrize("name", definition.WRITABLE)
def test_schema_valid_values_are_accepted_and_read_back(client, fields, widget, name):
    member = fields[name]

    @EXAMPLES
    @given(value=strategies.valid(member))
    def check(value):
        WidgetSettings.objects.filter(widget=widget).delete()
        response = patch(client, {name: value})
        assert response.status_code == 200, (value, response.content[:500])
        assert response.json()["data"][name] == strategies.expected(member, value), value
        assert client.get(SETTINGS).json()["data"][name] == strategies.expected(member, value)

    check()


@pytest.mark.parametrize("name", definition.WRITABLE)
def test_schema_invalid_values_are_refused_naming_the_field(client, fields, widget, name):
    member = fields[name]

    @EXAMPLES
    @given(value=strategies.invalid(member))
    def check(value):
        before = stored(widget)
        response = patch(client, {name: value})
        assert response.status_code == 422, (value, response.content[:500])
        errors = response.json()["errors"]
        assert errors and all(key == name or key.startswith(f"{name}.") for key in errors), (value, errors)
        assert stored(widget) == before

    check()


@pytest.mark.parametrize("name", definition.READ_ONLY)
def test_read_only_members_are_refused_whatever_the_value(client, fields, name):
    assert fields[name]["accepted_types"] == []

    @EXAMPLES
    @given(
        value=strategies.valid({**fields[name], "strict_json_type": "string", "min_length": 0, "max_length": 5})
        | strategies.invalid({"strict_json_type": "string", "accepted_types": [], "max_length": 3})
    )
    def check(value):
        response = patch(client, {name: value})
        assert response.status_code == 422
        assert list(response.json()["errors"]) == [name]

    check()


@pytest.mark.parametrize("name", definition.WRITABLE)
def test_the_stated_defaults_are_valid_values_of_their_field(client, fields, widget, name):
    member = fields[name]
    for generation_default in {repr(v): v for v in member["defaults"].values()}.values():
        if generation_default is None:
            continue
        WidgetSettings.objects.filter(widget=widget).delete()
        response = patch(client, {name: generation_default})
        assert response.status_code == 200, (generation_default, response.content)
        assert response.json()["data"][name] == generation_default


def test_a_fresh_widget_reads_the_effective_defaults_and_the_legacy_ones_differ_only_in_localization(
    api, legacy_widget, fields
):
    legacy = api(w=legacy_widget).get(SCHEMA).json()["data"]["fields"]
    data = api(w=legacy_widget).get(SETTINGS).json()["data"]
    differing = set()
    for name, member in legacy.items():
        if member["read_only"]:
            continue
        assert data[name] == member["effective_default"] == member["defaults"]["legacy"], name
        if member["effective_default"] != fields[name]["effective_default"]:
            differing.add(name)
    assert differing == {"widget_default_language", "widget_fallback_language"}
