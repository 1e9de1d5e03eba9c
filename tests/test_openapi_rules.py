"""The OpenAPI document states the rules the server enforces, so a contract tool that generates
requests from it gets no 422 for input the document calls valid, and what the server answers
validates against it."""

import pytest
from django.test import override_settings
from drf_spectacular.generators import SchemaGenerator

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def doc(django_db_blocker):
    with django_db_blocker.unblock(), override_settings(SCHEMA_INCLUDE_TEST_ROUTES=False):
        return SchemaGenerator().get_schema(request=None, public=True)


def query_schema(doc, path: str, name: str) -> dict:
    [param] = [p for p in doc["paths"][path]["get"]["parameters"] if p["in"] == "query" and p["name"] == name]
    return param["schema"]


# --- query parameters: what the server refuses is stated --------------------------------------------


@pytest.mark.parametrize(
    ("path", "name", "rules"),
    [
        ("/api/v1/chats", "q", {"minLength": 2, "maxLength": 100}),
        ("/api/v1/chats", "channel", {"maxLength": 64, "pattern": "^[a-z0-9_]{1,64}$"}),
        ("/api/v1/contacts", "query", {"minLength": 1, "maxLength": 100}),
        ("/api/v1/agents", "department_id", {"type": "integer", "minimum": 0}),
        ("/api/v1/chats", "cursor", {"maxLength": 512, "pattern": "^[A-Za-z0-9_-]+$"}),
        ("/api/v1/contacts", "cursor", {"maxLength": 512, "pattern": "^[A-Za-z0-9_-]+$"}),
        ("/api/v1/chats", "limit", {"type": "integer", "minimum": 1, "maximum": 100}),
    ],
)
def test_query_parameters_state_the_rules_the_server_enforces(doc, path, name, rules):
    schema = query_schema(doc, path, name)
    assert {key: schema.get(key) for key in rules} == rules


@pytest.mark.parametrize("path", ["/api/v1/stats", "/api/v1/stats/timeseries", "/api/v1/agents/stats"])
def test_metric_states_its_names(doc, path):
    pattern = query_schema(doc, path, "metric")["pattern"]
    assert "chats_total" in pattern and pattern.startswith("^")


@pytest.mark.parametrize("path", ["/api/v1/chats", "/api/v1/chats/{id}/messages", "/api/v1/stats"])
def test_from_and_to_state_a_date_or_date_time_from_1900(doc, path):
    for name in ("from", "to"):
        schema = query_schema(doc, path, name)
        assert {alt["format"] for alt in schema["anyOf"]} == {"date", "date-time"}
        assert schema["pattern"] == "^(?:19|[2-9][0-9])[0-9]{2}-"


def test_q_at_its_documented_bounds_is_accepted_and_past_them_refused(doc, api):
    schema = query_schema(doc, "/api/v1/chats", "q")
    client = api()
    assert client.get("/api/v1/chats", {"q": "a" * schema["maxLength"]}).status_code == 200
    assert client.get("/api/v1/chats", {"q": "a" * schema["minLength"]}).status_code == 200
    assert client.get("/api/v1/chats", {"q": "a" * (schema["maxLength"] + 1)}).status_code == 422
    assert client.get("/api/v1/chats", {"q": "a" * (schema["minLength"] - 1) or " "}).status_code == 422
