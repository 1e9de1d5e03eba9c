"""The OpenAPI document states the rules the server enforces, so a contract tool that generates
requests from it gets no 422 for input the document calls valid, and what the server answers
validates against it."""

import uuid

import jsonschema
import pytest
from django.test import override_settings
from drf_spectacular.generators import SchemaGenerator

from apps.chats.tests.factories import ChatFactory

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def doc(django_db_blocker):
    with django_db_blocker.unblock(), override_settings(SCHEMA_INCLUDE_TEST_ROUTES=False):
        return SchemaGenerator().get_schema(request=None, public=True)


def validator(doc, component: str) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(
        {"$ref": f"#/components/schemas/{component}", "components": doc["components"]}
    )


def query_schema(doc, path: str, name: str) -> dict:
    [param] = [p for p in doc["paths"][path]["get"]["parameters"] if p["in"] == "query" and p["name"] == name]
    return param["schema"]


def walk(node, path=""):
    yield path, node
    if isinstance(node, dict):
        for key, value in node.items():
            yield from walk(value, f"{path}/{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from walk(value, f"{path}/{index}")


# --- responses validate ---------------------------------------------------------------------------------


def test_no_alternative_list_has_an_any_value_branch(doc):
    # `oneOf: [{}, {type: null}]` refuses null (it matches both branches)
    bad = [
        path
        for path, node in walk(doc)
        if isinstance(node, dict) and any(branch == {} for key in ("oneOf", "anyOf") for branch in node.get(key, []))
    ]
    assert bad == []


def test_messages_as_served_validate_against_the_document(doc, api, widget):
    chat = ChatFactory(widget=widget, agent=None)
    from apps.agents.tests.factories import HumanAgentFactory

    agent = HumanAgentFactory(widget=widget)
    client = api()
    bodies = [
        {"type": "text", "body": "hello", "agent_id": agent.pk},
        {
            "type": "location",
            "coords": {"latitude": 55.75, "longitude": 37.62, "title": "Office"},
            "agent_id": agent.pk,
        },
        {"type": "sticker", "sticker": {"id": "smile"}, "agent_id": agent.pk},
    ]
    for body in bodies:
        response = client.post(
            f"/api/v1/chats/{chat.pk}/messages", body, format="json", HTTP_X_SERVICE_IDEMPOTENCY_KEY=uuid.uuid4().hex
        )
        assert response.status_code == 202, response.content
    messages = client.get(f"/api/v1/chats/{chat.pk}/messages").json()["data"]
    assert {m["type"] for m in messages} == {"text", "location", "sticker"}
    check = validator(doc, "MessageDoc")
    for message in messages:
        errors = [e.message for e in check.iter_errors(message)]
        assert errors == [], (message, errors)


# --- requests: what the server refuses is stated ----------------------------------------------------------


def test_every_object_with_members_in_a_request_body_refuses_others(doc):
    schemas = doc["components"]["schemas"]
    roots = [
        media["schema"]
        for item in doc["paths"].values()
        for op in item.values()
        if isinstance(op, dict) and "requestBody" in op
        for media in op["requestBody"]["content"].values()
    ]
    open_objects, seen, todo = [], set(), list(roots)
    while todo:
        node = todo.pop()
        for path, sub in walk(node):
            if not isinstance(sub, dict):
                continue
            ref = sub.get("$ref", "")
            if ref and ref not in seen:
                seen.add(ref)
                todo.append(schemas[ref.rsplit("/", 1)[-1]])
            if isinstance(sub.get("properties"), dict) and sub.get("additionalProperties") is not False:
                open_objects.append((ref or path, sorted(sub["properties"])))
    assert open_objects == []


@pytest.mark.parametrize(
    ("path", "name", "rules"),
    [
        ("/api/v1/chats", "q", {"minLength": 2, "maxLength": 100}),
        ("/api/v1/chats", "channel", {"maxLength": 64, "pattern": "^[a-z0-9_]{1,64}$"}),
        ("/api/v1/contacts", "query", {"minLength": 1, "maxLength": 100}),
        ("/api/v1/agents", "department_id", {"type": "integer", "minimum": 0}),
        ("/api/v1/chats", "cursor", {"maxLength": 512, "pattern": "^[A-Za-z0-9_-]*$"}),
        ("/api/v1/contacts", "cursor", {"maxLength": 512, "pattern": "^[A-Za-z0-9_-]*$"}),
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


@pytest.mark.parametrize(
    ("path", "types"),
    [
        ("/api/v1/agents/{id}/avatar", "image/jpeg, image/png, image/gif, image/webp"),
        ("/api/v1/widget/icons", "image/png, image/gif, image/webp"),
        ("/api/v1/files", "*/*"),
    ],
)
def test_multipart_uploads_state_the_file_types_taken(doc, path, types):
    media = doc["paths"][path]["post"]["requestBody"]["content"]["multipart/form-data"]
    assert media["encoding"]["file"]["contentType"] == types


# Path parameters whose values are free text: a template's slug and the widget's button guid.
TEXT_PATH_PARAMETERS = {"slug", "button_guid"}


def test_a_numeric_path_parameter_is_documented_as_an_integer(doc):
    """A path parameter the router matches as any text (`[^/]+`) is documented as an integer unless
    its values are text; a value that is not an integer is then the documented 404."""
    untyped = sorted(
        (path, param["name"])
        for path, operations in doc["paths"].items()
        for operation in operations.values()
        if isinstance(operation, dict)
        for param in operation.get("parameters", [])
        if param["in"] == "path"
        and param["schema"] == {"type": "string", "pattern": "^[^/]+$"}
        and param["name"] not in TEXT_PATH_PARAMETERS
    )
    assert untyped == []
    for path, name in [
        ("/api/v1/ai/assistants/{id}/test", "id"),
        ("/api/v1/ai/learning/persona-versions/{version}", "version"),
    ]:
        for operation in doc["paths"][path].values():
            [param] = [p for p in operation["parameters"] if p["in"] == "path" and p["name"] == name]
            assert param["schema"]["type"] == "integer"
