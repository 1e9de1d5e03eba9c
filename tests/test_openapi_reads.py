"""The OpenAPI document declares exactly the query parameters the API reads and the problems it
answers.

Query parameters are observed, not guessed: a test middleware (added through the MIDDLEWARE setting)
gives each request a `QueryDict` that records the names looked up in it (`get`, `getlist`, `[]`,
`in`) between the middleware and the view. Every GET of the document is called with a token holding
every scope, the support gate open for it (path variables: the widget's `button_guid`, else `0`):

- without parameters: every name looked up is a parameter of that operation (DRF's `?format=`
  included: the API has none);
- with every name an operation declares or a query serializer knows, when this one does not declare
  it: refused as unknown (422), or never looked up; an operation refusing one documents 422;
- with each declared parameter: never refused as unknown;
- every member of a problem answer is a property of the `Problem` schema.

Statuses: every status of a route's row in the spec's route tables (`Codes`) is among that
operation's documented responses, unless `UNANSWERED_STATUSES` says why the server never answers it.
"""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.http import QueryDict
from django.test import override_settings
from django.utils import timezone
from drf_spectacular.generators import SchemaGenerator
from rest_framework.test import APIClient

from apps.core.api.serializers import InputSerializer
from tests.test_openapi_and_spec import SPEC

pytestmark = pytest.mark.django_db

UNKNOWN_NAMES = ("Unknown field.", "Unknown parameter.")
PROBE = "not_a_parameter"

# Spec `Codes` the server never answers on that route (found by reading the view and its service).
UNANSWERED_STATUSES: dict[tuple[str, str], dict[str, str]] = {
    ("POST", "/api/v1/ai/assistant/tickets"): {"404": "intake has no off switch and looks up no object by id"},
    ("POST", "/api/compat/legacy/bot/{}"): {"202": "every bot call answers 200 (nobody online: 200 no_agents_online)"},
    ("GET", "/api/v1/external-operators"): {"404": "the widget's list, with no lookup"},
    ("POST", "/api/v1/external-operators/{}/tests"): {"503": "send_probe stores the probe and its delivery row only"},
}


_reads: list[str] = []


class RecordingQueryDict(QueryDict):
    """A read-only QueryDict that records each name looked up while `reads` is a list."""

    reads: list[str] | None = None

    def _record(self, key):
        # DRF's negotiation without URL_FORMAT_OVERRIDE looks up None, which no query string holds.
        if self.reads is not None and key is not None:
            self.reads.append(key)

    def __getitem__(self, key):
        self._record(key)
        return super().__getitem__(key)

    def get(self, key, default=None):
        self._record(key)
        return super().get(key, default)

    def getlist(self, key, default=None):
        self._record(key)
        return super().getlist(key, default)

    def __contains__(self, key):
        self._record(key)
        return super().__contains__(key)


class RecordQueryReads:
    """Test middleware, innermost: the names looked up in the request's GET from here to the view
    and back; what reads the query after the answer leaves this middleware is no view."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        query = RecordingQueryDict(request.META.get("QUERY_STRING", ""), encoding=request.encoding)
        query.reads = []
        request.GET = query
        try:
            return self.get_response(request)
        finally:
            _reads.extend(query.reads)
            query.reads = None


@pytest.fixture(scope="module")
def doc(django_db_blocker) -> dict:
    with django_db_blocker.unblock(), override_settings(SCHEMA_INCLUDE_TEST_ROUTES=False):
        return SchemaGenerator().get_schema(request=None, public=True)


@pytest.fixture
def client(make_token, widget, settings) -> APIClient:
    from apps.support.config import configure_support
    from tests.support.factories import AgentFactory

    settings.MIDDLEWARE = [*settings.MIDDLEWARE, f"{__name__}.RecordQueryReads"]
    settings.API_RATE_LIMIT_PER_MINUTE = 1_000_000
    token = make_token()
    operator = AgentFactory(widget=widget, name="Support", type="human")
    configure_support(
        widget=widget,
        data={
            "enabled": True,
            "operator_agent_id": operator.pk,
            "allowed_tokens": [token[:12]],
            "ip_allowlist": ["127.0.0.1/32", "::1/128"],
            "channels": ["widget"],
        },
    )
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return api


def query_parameters(op: dict) -> dict[str, dict]:
    return {p["name"]: p for p in op.get("parameters", []) if p["in"] == "query"}


def example(parameter: dict) -> str:
    """A value the parameter's schema allows (for the required ones; others may be refused as
    invalid, never as unknown)."""
    schema = parameter.get("schema", {})
    if schema.get("enum"):
        return str(schema["enum"][0])
    if "anyOf" in schema or schema.get("format") in ("date", "date-time"):
        return (timezone.now() - timedelta(hours=1)).isoformat()
    if schema.get("type") == "integer":
        return str(max(schema.get("minimum", 1), 1))
    if schema.get("type") == "boolean":
        return "true"
    return "hello"


def get_operations(doc, widget) -> list[tuple[str, dict]]:
    """Every GET of the document, `button_guid` as the widget's and other path variables as `0` (a
    detail route answers 404 once it looks its object up: what it read of the query before that
    still counts)."""
    operations = []
    for path, item in doc["paths"].items():
        if "get" in item:
            url = re.sub(r"\{[^}]+\}", "0", path.replace("{button_guid}", widget.button_guid))
            operations.append((url, item["get"]))
    return operations


def known_names(doc) -> set[str]:
    """Every query parameter name of the document and every field of a query serializer."""
    names = {
        name
        for _, item in doc["paths"].items()
        for op in item.values()
        if isinstance(op, dict)
        for name in query_parameters(op)
    }
    stack = [InputSerializer]
    while stack:
        cls = stack.pop()
        stack.extend(cls.__subclasses__())
        if cls.__name__.endswith("Query"):
            names.update(cls().fields)
    return names | {"cursor", "limit", PROBE}


def call(client, path, params: dict):
    _reads.clear()
    response = client.get(path, params)
    return response, set(_reads)


def refused(response, name: str) -> bool:
    messages = (response.json().get("errors") or {}).get(name, []) if response.status_code == 422 else []
    return any(m in UNKNOWN_NAMES for m in messages)


def test_every_get_operation_is_exercised(doc, client, widget):
    unreached = {}
    for path, op in get_operations(doc, widget):
        if "/0" in path or not path.startswith("/api/v1/"):
            continue
        base = {n: example(p) for n, p in query_parameters(op).items() if p.get("required")}
        response, _ = call(client, path, base)
        if response.status_code >= 300:
            unreached[path] = response.status_code
    assert not unreached, f"GET operations answering other than 2xx with their required parameters: {unreached}"


def test_every_query_parameter_a_view_looks_up_is_declared(doc, client, widget):
    undeclared = {}
    for path, op in get_operations(doc, widget):
        declared = query_parameters(op)
        base = {n: example(p) for n, p in declared.items() if p.get("required")}
        _, read = call(client, path, base)
        if read - set(declared):
            undeclared[path] = sorted(read - set(declared))
    assert not undeclared, f"query parameters read but not declared: {undeclared}"


def test_an_undeclared_name_is_refused_or_never_read(doc, client, widget):
    names = known_names(doc)
    accepted = {}
    for path, op in get_operations(doc, widget):
        declared = query_parameters(op)
        base = {n: example(p) for n, p in declared.items() if p.get("required")}
        candidates = sorted(names - set(declared))
        response, _ = call(client, path, {**base, **dict.fromkeys(candidates, "1")})
        for name in candidates:
            if refused(response, name):
                continue
            response, read = call(client, path, {**base, name: "1"})
            if not refused(response, name) and name in read:
                accepted.setdefault(path, []).append(f"{name} ({response.status_code})")
    assert not accepted, f"undeclared query parameters a view reads: {accepted}"


def test_an_operation_refusing_an_undeclared_name_documents_422(doc, client, widget):
    undocumented = []
    for path, op in get_operations(doc, widget):
        base = {n: example(p) for n, p in query_parameters(op).items() if p.get("required")}
        response, _ = call(client, path, {**base, PROBE: "1"})
        if refused(response, PROBE) and "422" not in op["responses"]:
            undocumented.append(path)
    assert not undocumented, (
        f"GET operations answering 422 to an unknown parameter without documenting it: {undocumented}"
    )


def test_a_declared_parameter_is_never_refused_as_unknown(doc, client, widget):
    unknown = {}
    for path, op in get_operations(doc, widget):
        declared = query_parameters(op)
        base = {n: example(p) for n, p in declared.items() if p.get("required")}
        for name, parameter in declared.items():
            response, _ = call(client, path, {**base, name: example(parameter)})
            if response.status_code == 422:
                messages = (response.json().get("errors") or {}).get(name, [])
                if any(m in UNKNOWN_NAMES for m in messages):
                    unknown.setdefault(path, []).append(name)
    assert not unknown, f"declared query parameters the view refuses as unknown: {unknown}"


def spec_codes() -> dict[tuple[str, str], list[str]]:
    """(METHOD, /api path with {} variables) -> the statuses of its `Codes` cell."""
    codes, header = {}, []
    for line in SPEC.read_text(encoding="utf-8").splitlines():
        if not line.startswith("|"):
            header = []
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells[0] == "Method":
            header = cells
            continue
        if "Codes" not in header or len(cells) < len(header) or not cells[1].startswith(("/v1/", "/compat/")):
            continue
        path = "/api" + re.sub(r"\{[^}]+\}", "{}", cells[1])
        codes[(cells[0], path)] = re.findall(r"\b[1-5][0-9]{2}\b", cells[header.index("Codes")])
    return codes


def test_every_status_the_spec_names_for_a_route_is_documented(doc):
    operations = {
        (method.upper(), re.sub(r"\{[^}]+\}", "{}", path)): op
        for path, item in doc["paths"].items()
        for method, op in item.items()
        if method in ("get", "post", "put", "patch", "delete")
    }
    missing = []
    for route, statuses in spec_codes().items():
        op = operations.get(route)
        assert op is not None, f"{route} of the spec is not in the document"
        exempt = UNANSWERED_STATUSES.get(route, {})
        missing += [f"{' '.join(route)} {s}" for s in statuses if s not in op["responses"] and s not in exempt]
    assert not missing, f"statuses of the spec's route tables the document omits: {missing}"


def test_every_member_of_a_problem_answer_is_a_problem_property(doc, client, widget):
    """Problem answers of every GET (support routes add `reason`) name only documented members."""
    properties = set(doc["components"]["schemas"]["Problem"]["properties"])
    undocumented = {}
    for path, op in get_operations(doc, widget):
        response, _ = call(client, path, {PROBE: "1"})
        if response.get("Content-Type", "").startswith("application/problem+json"):
            extra = set(response.json()) - properties
            if extra:
                undocumented[path] = sorted(extra)
    assert not undocumented, f"problem members the Problem schema does not declare: {undocumented}"


def test_a_support_problem_carries_its_reason(client):
    body = client.get("/api/v1/support/tickets", {"state": "bogus"}).json()
    assert body["status"] == 422
    assert body["reason"] == body["code"] == "validation_failed"


# Declared parameters the view must not ignore, on routes that page or cap by hand.


@pytest.mark.parametrize(
    ("params", "expected"),
    [({}, 3), ({"limit": "2"}, 2), ({"category": "safety"}, 1), ({"to": "2000-01-01"}, 0)],
)
def test_demand_signal_parameters_narrow_the_answer(client, widget, params, expected):
    from apps.ai.models import DemandSignal

    for category in ("unanswered", "escalation", "safety"):
        DemandSignal.objects.create(widget=widget, category=category, topic=f"{category} topic")
    response = client.get("/api/v1/ai/demand-signals", params)
    assert response.status_code == 200
    assert len(response.json()["data"]) == expected


def test_kb_sources_page_by_limit_and_cursor(client, widget):
    from apps.kb.models import KbChunk

    for ref in ("manual:1", "manual:2", "manual:3"):
        KbChunk.objects.create(widget=widget, content="x", source_ref=ref, embedding=b"", embedding_model="m")
    first = client.get("/api/v1/kb/sources", {"limit": "2"}).json()
    rest = client.get("/api/v1/kb/sources", {"limit": "2", "cursor": first["next_cursor"]}).json()
    assert [row["source_ref"] for row in first["data"] + rest["data"]] == ["manual:1", "manual:2", "manual:3"]
    assert rest["next_cursor"] is None
