"""OpenAPI: every operation shows its scopes (as the security requirement, OpenAPI 3.1 role
names, and `x-scopes`), `x-idempotency`, the idempotency header, and its problem responses."""

from __future__ import annotations

import re

from drf_spectacular.openapi import AutoSchema

from apps.core.errors import PROBLEM_CONTENT_TYPE
from apps.core.idempotency import HEADER as IDEMPOTENCY_HEADER

PROBLEM_TITLES = {
    400: "Bad request (malformed JSON, missing or invalid idempotency key)",
    401: "Missing, malformed, unknown, expired or revoked token",
    403: "API disabled for the widget, or the token lacks the scope",
    404: "Not found (a foreign id answers the same)",
    405: "Method not allowed",
    409: "Conflict (state, or idempotency key reused within 24 h)",
    413: "Request body too large",
    415: "Unsupported media type",
    422: "Validation failed; `errors` maps dotted paths to messages",
    429: "Rate limited; see Retry-After",
    500: "Internal error",
    502: "Upstream provider failed",
    503: "Service unavailable",
}

PROBLEM_SCHEMA = {
    "type": "object",
    "description": "RFC 9457 problem details.",
    "required": ["type", "title", "status", "detail", "instance", "code"],
    "properties": {
        "type": {"type": "string", "description": "`/api/problems/<code>` or `about:blank`."},
        "title": {"type": "string"},
        "status": {"type": "integer"},
        "detail": {"type": "string"},
        "instance": {"type": "string", "description": "The request path."},
        "code": {"type": "string", "description": "Machine-readable condition, snake_case."},
        "errors": {
            "type": "object",
            "additionalProperties": {"type": "array", "items": {"type": "string"}},
            "description": "Validation errors keyed by dotted path (`keyboard.buttons.3.url`).",
        },
        "required_scopes": {"type": "array", "items": {"type": "string"}},
        "previous": {
            "type": ["object", "null"],
            "description": "On idempotency_key_reused: the original request's result.",
        },
    },
    "additionalProperties": True,
}

_RATE_HEADERS = {
    "X-RateLimit-Limit": {"schema": {"type": "integer"}, "description": "Requests allowed per minute."},
    "X-RateLimit-Remaining": {"schema": {"type": "integer"}, "description": "Requests left in the window."},
    "X-RateLimit-Reset": {"schema": {"type": "integer"}, "description": "Seconds until a request frees up."},
}


def problem_components() -> dict:
    responses = {}
    for status, title in PROBLEM_TITLES.items():
        response = {
            "description": title,
            "content": {PROBLEM_CONTENT_TYPE: {"schema": {"$ref": "#/components/schemas/Problem"}}},
        }
        if status == 429:
            response["headers"] = {"Retry-After": {"schema": {"type": "integer"}}}
        if status == 401:
            response["headers"] = {"WWW-Authenticate": {"schema": {"type": "string"}}}
        responses[f"Problem{status}"] = response
    return {"schemas": {"Problem": PROBLEM_SCHEMA}, "responses": responses}


class ScopedAutoSchema(AutoSchema):
    def _action(self) -> str | None:
        view = self.view
        if getattr(view, "action_map", None):
            return getattr(view, "action", None)
        return self.method.lower()

    def get_auth(self):
        scopes = self.view.route_scopes.get(self._action()) or []
        return [{"ApiToken": [scope]} for scope in scopes]

    def get_override_parameters(self):
        params = list(super().get_override_parameters())
        if self._action() in getattr(self.view, "idempotency_required", ()):
            from drf_spectacular.utils import OpenApiParameter

            params.append(
                OpenApiParameter(
                    IDEMPOTENCY_HEADER,
                    type=str,
                    location=OpenApiParameter.HEADER,
                    required=True,
                    description="1 to 64 bytes, no ASCII whitespace or controls; unique per widget for 24 h.",
                )
            )
        return params

    def get_operation(self, *args, **kwargs):
        operation = super().get_operation(*args, **kwargs)
        if operation is None:
            return None
        action = self._action()
        scopes = self.view.route_scopes.get(action) or []
        operation["x-scopes"] = list(scopes)
        idem = action in getattr(self.view, "idempotency_required", ())
        operation["x-idempotency"] = "required" if idem else "none"
        scope_text = f"**Scopes** (any one): {', '.join(f'`{s}`' for s in scopes)}."
        idem_text = f" **Idempotency**: `{IDEMPOTENCY_HEADER}` required." if idem else ""
        description = operation.get("description", "")
        operation["description"] = f"{description}\n\n{scope_text}{idem_text}".strip()

        statuses = {401, 403, 429, 500}
        has_body = self.method in ("POST", "PUT", "PATCH")
        if has_body:
            statuses |= {400, 413, 415, 422}
        if idem:
            statuses |= {400, 409}
        if re.search(r"\{[^}]+\}", self.path):
            statuses.add(404)
        if self.method == "GET" and self._is_list_view():
            statuses.add(422)
        statuses |= set(getattr(self.view, "problem_statuses", {}).get(action, ()))
        for param in operation.get("parameters", []):
            if param.get("in") == "header" and param.get("name") == IDEMPOTENCY_HEADER:
                param["schema"] = {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": 64,
                    "pattern": r"^[^\s\x00-\x1f\x7f]+$",
                }
        responses = operation.setdefault("responses", {})
        for status in sorted(statuses):
            responses.setdefault(str(status), {"$ref": f"#/components/responses/Problem{status}"})
        for code, response in responses.items():
            if code.startswith("2") and isinstance(response, dict) and "$ref" not in response:
                response.setdefault("headers", {}).update(_RATE_HEADERS)
        return operation


def only_public_api(endpoints, **kwargs):
    """Preprocessing hook: document /api/v1 only (not the schema view itself). Test-only routes
    exist only under the test URLconf and are documented there so contract tests can read them."""
    from django.conf import settings

    include_test = getattr(settings, "SCHEMA_INCLUDE_TEST_ROUTES", False)
    return [
        (path, path_regex, method, callback)
        for path, path_regex, method, callback in endpoints
        if path.startswith("/api/v1/")
        and not path.startswith("/api/v1/schema")
        and (include_test or not path.startswith("/api/v1/_test"))
    ]


def add_problem_components(result, generator, request, public):
    """Postprocessing hook: the shared Problem schema and one response per problem status; paths
    as the spec writes them (routes accept an optional trailing slash, documented without)."""
    result["paths"] = {
        (path.rstrip("/") if path != "/" else path): item for path, item in result.get("paths", {}).items()
    }
    components = result.setdefault("components", {})
    # Input serializers refuse members they do not declare (422): say so in their schemas.
    for name, schema in components.get("schemas", {}).items():
        if name.endswith("Request") and schema.get("type") == "object":
            schema.setdefault("additionalProperties", False)
    extra = problem_components()
    components.setdefault("schemas", {}).update(extra["schemas"])
    components.setdefault("responses", {}).update(extra["responses"])
    return result
