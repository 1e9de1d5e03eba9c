"""OpenAPI document and the route table of spec/endpoints.md against the router."""

import re
from pathlib import Path

import pytest
from django.test import override_settings
from drf_spectacular.generators import SchemaGenerator

from apps.core.auth.scopes import ALL_SCOPES, CONDITIONAL_SCOPES, OPERATIONAL_SCOPES, RESERVED_SCOPES

# The contract's route tables, kept in the repository so a clone checks itself; while the shared
# contract sits beside the clone, the copy must equal it (test below).
SPEC = Path(__file__).resolve().parent / "spec" / "endpoints.md"
SHARED_SPEC = Path(__file__).resolve().parents[2] / "shared" / "spec" / "endpoints.md"
SCOPE_RE = re.compile(r"[a-z]+(?::[a-z]+)+")


def spec_routes() -> dict[tuple[str, str], frozenset[str]]:
    """(METHOD, /v1/path with {} params) -> scopes (any one) from every table with a Scope column."""
    routes = {}
    header = []
    for line in SPEC.read_text(encoding="utf-8").splitlines():
        if not line.startswith("|"):
            header = []
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells and cells[0] == "Method":
            header = cells
            continue
        if len(cells) < 3 or not cells[1].startswith(("/v1/", "/compat/")):
            continue
        method, path = cells[0], re.sub(r"\{[^}]+\}", "{}", cells[1])
        scopes = frozenset()
        if "Scope" in header:
            route_part = cells[header.index("Scope")].split(";")[0]
            scopes = frozenset(SCOPE_RE.findall(route_part))
        routes[(method, path)] = scopes
    return routes


# Routes the spec leaves "not shown" and product-decisions.md fixes (path -> scopes).
DECIDED_ROUTES: dict[tuple[str, str], frozenset[str]] = {
    ("POST", "/v1/channels"): frozenset({"channels:register"}),  # "Custom channels"
    # "Canned responses"; render needs chats:read as well, checked in the action
    ("GET", "/v1/canned-responses"): frozenset({"canned:read"}),
    # Wave 4, "Team work": mentions
    ("GET", "/v1/mentions"): frozenset({"chats:read"}),
    ("POST", "/v1/mentions/{}/read"): frozenset({"chats:write"}),
    ("POST", "/v1/canned-responses"): frozenset({"canned:write"}),
    ("GET", "/v1/canned-responses/{}"): frozenset({"canned:read"}),
    ("PATCH", "/v1/canned-responses/{}"): frozenset({"canned:write"}),
    ("DELETE", "/v1/canned-responses/{}"): frozenset({"canned:write"}),
    ("GET", "/v1/canned-responses/{}/render"): frozenset({"canned:read"}),
    # "Team work": automation rules
    ("GET", "/v1/automation-rules"): frozenset({"automation:read"}),
    ("POST", "/v1/automation-rules"): frozenset({"automation:write"}),
    ("GET", "/v1/automation-rules/{}"): frozenset({"automation:read"}),
    ("PATCH", "/v1/automation-rules/{}"): frozenset({"automation:write"}),
    ("DELETE", "/v1/automation-rules/{}"): frozenset({"automation:write"}),
    ("GET", "/v1/automation-rules/{}/runs"): frozenset({"automation:read"}),
    ("GET", "/v1/widget/business-hours"): frozenset({"widget:read"}),  # "Business hours that act"
    ("PUT", "/v1/widget/business-hours"): frozenset({"widget:write"}),
    # "Data protection"
    ("POST", "/v1/contacts/{}/erase"): frozenset({"privacy:write"}),
    ("GET", "/v1/contacts/{}/export"): frozenset({"contacts:read"}),
    ("GET", "/v1/widget/retention"): frozenset({"widget:read"}),
    ("PUT", "/v1/widget/retention"): frozenset({"privacy:write"}),
    ("GET", "/v1/audit-log"): frozenset({"audit:read"}),
    ("GET", "/v1/chats/export"): frozenset({"chats:read"}),  # "Agent assist and answers with sources"
    ("POST", "/v1/chats/{}/suggest-reply"): frozenset({"chats:write"}),
    # Wave 4, "Routing that never loses a visitor"
    ("GET", "/v1/routing"): frozenset({"routing:read"}),
    ("PUT", "/v1/routing"): frozenset({"routing:write"}),
    ("GET", "/v1/chats/{}/routing"): frozenset({"chats:read"}),
    ("GET", "/v1/sla-policies"): frozenset({"sla:read"}),
    ("POST", "/v1/sla-policies"): frozenset({"sla:write"}),
    ("GET", "/v1/sla-policies/{}"): frozenset({"sla:read"}),
    ("PATCH", "/v1/sla-policies/{}"): frozenset({"sla:write"}),
    ("DELETE", "/v1/sla-policies/{}"): frozenset({"sla:write"}),
    ("GET", "/v1/stats/sla"): frozenset({"stats:read"}),
    # "Routing that never loses a visitor": its statistics, beside the stats shapes the contract fixes
    ("GET", "/v1/stats/routing"): frozenset({"stats:read"}),
    # Wave 4, "The widget as the owner's platform": proactive messages
    ("GET", "/v1/proactive-messages"): frozenset({"campaigns:read"}),
    ("POST", "/v1/proactive-messages"): frozenset({"campaigns:write"}),
    ("GET", "/v1/proactive-messages/{}"): frozenset({"campaigns:read"}),
    ("PATCH", "/v1/proactive-messages/{}"): frozenset({"campaigns:write"}),
    ("DELETE", "/v1/proactive-messages/{}"): frozenset({"campaigns:write"}),
    ("GET", "/v1/proactive-messages/{}/stats"): frozenset({"campaigns:read"}),
    # "The widget as the owner's platform": identity verification
    ("POST", "/v1/widget/identity-secret"): frozenset({"widget:write"}),
    ("GET", "/v1/contacts/{}/identity"): frozenset({"contacts:read"}),
    # "Team work": contact merge
    ("POST", "/v1/contacts/{}/merge"): frozenset({"contacts:write"}),
    ("GET", "/v1/contacts/by-external-id/{}"): frozenset({"contacts:read"}),
    # Wave 4, "Team work": macros
    ("GET", "/v1/macros"): frozenset({"macros:read"}),
    ("POST", "/v1/macros"): frozenset({"macros:write"}),
    ("GET", "/v1/macros/{}"): frozenset({"macros:read"}),
    ("PATCH", "/v1/macros/{}"): frozenset({"macros:write"}),
    ("DELETE", "/v1/macros/{}"): frozenset({"macros:write"}),
    ("POST", "/v1/chats/{}/macros/{}/run"): frozenset({"chats:write"}),
    # Wave 4, "Team work": labels on chats
    ("GET", "/v1/labels"): frozenset({"labels:read"}),
    ("POST", "/v1/labels"): frozenset({"labels:write"}),
    ("PATCH", "/v1/labels/{}"): frozenset({"labels:write"}),
    ("DELETE", "/v1/labels/{}"): frozenset({"labels:write"}),
    ("GET", "/v1/chats/{}/labels"): frozenset({"chats:read"}),
    ("PUT", "/v1/chats/{}/labels"): frozenset({"chats:write"}),
}


def schema(include_test=False) -> dict:
    with override_settings(SCHEMA_INCLUDE_TEST_ROUTES=include_test):
        return SchemaGenerator().get_schema(request=None, public=True)


def operations(doc):
    """The bearer API's operations (the visitor API, tag `visitor`, has its own rules:
    tests/test_openapi_docs.py)."""
    for path, item in doc["paths"].items():
        if path.startswith("/api/visitor/"):
            continue
        for method, op in item.items():
            if method in ("get", "post", "put", "patch", "delete"):
                yield path, method, op


def test_spec_parser_reads_the_route_tables():
    routes = spec_routes()
    assert len(routes) > 150
    assert routes[("GET", "/v1/chats")] == {"chats:read"}
    assert routes[("POST", "/v1/support/tickets/{}/close")] == {"support:write", "support:tickets:close"}
    assert routes[("POST", "/v1/ai/replies")] == {"responder:inject"}
    assert routes[("GET", "/compat/legacy/chat/{}/status")] == frozenset()


def test_every_scope_the_spec_routes_name_is_in_the_catalogue():
    named = set().union(*spec_routes().values())
    assert named <= ALL_SCOPES, named - ALL_SCOPES
    assert not named & RESERVED_SCOPES


def test_catalogue_has_the_spec_44_grantable_43_operational_and_the_wave_3_and_4_scopes():
    added = {"canned:read", "canned:write", "privacy:write", "audit:read"}  # product-decisions.md "Wave 3"
    added |= {"routing:read", "routing:write", "sla:read", "sla:write"}  # "Wave 4"
    added |= {"campaigns:read", "campaigns:write"}  # "Wave 4", proactive messages
    added |= {"macros:read", "macros:write"}  # "Team work", macros
    added |= {"labels:read", "labels:write"}  # "Wave 4", team work: labels
    added |= {"automation:read", "automation:write"}  # "Team work", automation rules
    assert added <= OPERATIONAL_SCOPES
    assert len(ALL_SCOPES - added) == 44 and len(OPERATIONAL_SCOPES - added) == 43
    assert RESERVED_SCOPES == {"partners:withdraw"} and CONDITIONAL_SCOPES == {"responder:escalate"}


@pytest.mark.django_db
def test_every_production_route_matches_the_spec_table():
    routes = {**spec_routes(), **DECIDED_ROUTES}
    for path, method, op in operations(schema()):
        key = (method.upper(), re.sub(r"\{[^}]+\}", "{}", path.removeprefix("/api")))
        assert key in routes, f"{key} is not in spec/endpoints.md"
        if routes[key]:
            assert set(op["x-scopes"]) == routes[key], (key, op["x-scopes"], routes[key])


@pytest.mark.django_db
def test_every_operation_shows_scopes_idempotency_and_problems():
    doc = schema(include_test=True)
    ops = list(operations(doc))
    assert ops
    for path, method, op in ops:
        if path.startswith("/api/compat/"):  # authentication path 4: a secret in the path
            assert op["x-auth"] == "path-secret" and op["security"] == [] and op["x-scopes"] == []
            assert op["x-idempotency"] == "none" and "404" in op["responses"], (path, method)
            continue
        assert op["x-scopes"], (path, method)
        assert op["security"] == [{"ApiToken": [s]} for s in op["x-scopes"]]
        assert op["x-idempotency"] in ("required", "none")
        for status in ("401", "403", "429"):
            assert op["responses"][status]["$ref"] == f"#/components/responses/Problem{status}"
        if "{" in path:
            assert "404" in op["responses"], (path, method)
    create = doc["paths"]["/api/v1/_test/notes"]["post"]
    assert create["x-idempotency"] == "required"
    header = [p for p in create["parameters"] if p["name"] == "X-Service-Idempotency-Key"]
    assert header and header[0]["required"] is True
    assert {"400", "409", "413", "415", "422"} <= set(create["responses"])
    assert doc["components"]["schemas"]["Problem"]["required"] == [
        "type",
        "title",
        "status",
        "detail",
        "instance",
        "code",
    ]


@pytest.mark.django_db
def test_schema_docs_and_redoc_are_served(client):
    assert client.get("/api/v1/schema/").status_code == 200
    assert client.get("/api/v1/schema/?format=json").json()["openapi"].startswith("3.1")
    docs = client.get("/api/docs/")
    assert docs.status_code == 200 and b"swagger" in docs.content.lower()
    assert client.get("/api/redoc/").status_code == 200


def test_every_reference_in_the_schema_resolves():
    """A `$ref` written by hand to a serializer no view names is never registered: clients that
    resolve references (schemathesis, generators) would skip or reject the part behind it."""
    doc = schema(include_test=True)
    components = doc.get("components", {})
    refs = set()

    def walk(node):
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str):
                refs.add(ref)
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(doc)
    assert refs, "the walk found no reference at all"
    missing = []
    for ref in sorted(refs):
        assert ref.startswith("#/components/"), ref
        _, _, section, name = ref.split("/", 3)
        if name not in components.get(section, {}):
            missing.append(ref)
    assert missing == []


@pytest.mark.skipif(not SHARED_SPEC.exists(), reason="the shared contract is not beside this clone")
def test_the_kept_copy_of_the_route_tables_equals_the_contract():
    assert SPEC.read_text(encoding="utf-8") == SHARED_SPEC.read_text(encoding="utf-8")
