"""OpenAPI: every operation shows its scopes (as the security requirement, OpenAPI 3.1 role
names, and `x-scopes`), `x-idempotency`, the idempotency header, and its problem responses."""

from __future__ import annotations

import inspect
import re

from drf_spectacular.openapi import AutoSchema
from drf_spectacular.plumbing import force_instance, get_view_model, is_serializer
from drf_spectacular.utils import OpenApiRequest
from rest_framework.schemas.utils import get_pk_description

from apps.core.errors import PROBLEM_CONTENT_TYPE
from apps.core.idempotency import HEADER as IDEMPOTENCY_HEADER

PROBLEM_TITLES = {
    400: "Bad request (malformed JSON, more than 1000 parameters, missing or invalid idempotency key)",
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
    504: "Upstream provider work exceeded its budget",
}

PROBLEM_SCHEMA = {
    "type": "object",
    "description": "RFC 9457 problem details.",
    "required": ["type", "title", "status", "detail", "instance", "code"],
    "properties": {
        "type": {"type": "string", "description": "`/api/problems/<code>` or `about:blank`."},
        "title": {"type": "string", "description": "A short summary of the problem type."},
        "status": {"type": "integer", "description": "The HTTP status code of the answer."},
        "detail": {"type": "string", "description": "What went wrong in this request, for people."},
        "instance": {"type": "string", "description": "The request path."},
        "code": {"type": "string", "description": "Machine-readable condition, snake_case."},
        "errors": {
            "type": "object",
            "additionalProperties": {"type": "array", "items": {"type": "string"}},
            "description": "Validation errors keyed by dotted path (`keyboard.buttons.3.url`).",
        },
        "required_scopes": {
            "type": "array",
            "items": {"type": "string"},
            "description": "On `missing_scope`: the scopes that grant the operation (any one suffices).",
        },
        "previous": {
            "type": ["object", "null"],
            "description": "On idempotency_key_reused: the original request's result.",
        },
        "reason": {
            "type": "string",
            "description": "On support errors (every error of a `/api/v1/support/` route): a machine-readable "
            "reason, equal to `code`.",
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


def own_doc(obj) -> str:
    """The docstring `obj` itself declares, never one inherited from a base class: a base's text
    (\"Base of every XInput serializer\", a base view's SECURITY note) is for us, not integrators."""
    doc = obj.__dict__.get("__doc__") if inspect.isclass(obj) else getattr(obj, "__doc__", None)
    return inspect.cleandoc(doc) if doc else ""


class PathParameterHelp:
    """AutoSchema mixin: every path variable says what it names. drf-spectacular describes a
    primary-key lookup only when it types the variable from the model; one typed by its URL pattern
    (`lookup_value_regex`, `re_path`) gets no description."""

    def get_operation(self, *args, **kwargs):
        """Path variables without a description take the view's `path_parameter_help` (`{name: text}`:
        guids, numbers, slugs, secrets, a second id in an action's path), else, for the view's lookup
        on its model's primary key, drf-spectacular's own text for a typed one ("A unique integer
        value identifying this x.")."""
        operation = super().get_operation(*args, **kwargs)
        if operation is None:
            return None
        declared = getattr(self.view, "path_parameter_help", {})
        for parameter in operation.get("parameters", []):
            if parameter.get("in") == "path" and not parameter.get("description"):
                text = declared.get(parameter["name"]) or self._primary_key_description(parameter["name"])
                if text:
                    parameter["description"] = text
        return operation

    def _primary_key_description(self, variable: str) -> str:
        lookup = getattr(self.view, "lookup_url_kwarg", None) or getattr(self.view, "lookup_field", None)
        if not (lookup == variable or (lookup == "pk" and variable in ("pk", "id"))):
            return ""
        model = get_view_model(self.view, emit_warnings=False)
        if model is None:
            return ""
        field = model._meta.pk if lookup == "pk" else model._meta.get_field(lookup)
        return get_pk_description(model, field) if field.primary_key else ""


class DescribedAutoSchema(PathParameterHelp, AutoSchema):
    """Descriptions come from `extend_schema(description=...)` or from the view's, action's or
    serializer's own docstring; inherited docstrings never become descriptions."""

    def get_description(self) -> str:
        action_or_method = getattr(self.view, getattr(self.view, "action", self.method.lower()), None)
        if action_or_method is not None and getattr(action_or_method, "__module__", "").startswith("rest_framework"):
            action_or_method = None  # DRF's own mixin methods document DRF, not this route
        action_doc = own_doc(action_or_method) if action_or_method is not None else ""
        return action_doc or own_doc(self.view.__class__)

    def _map_basic_serializer(self, serializer, direction):
        schema = super()._map_basic_serializer(serializer, direction)
        if not own_doc(type(serializer)):
            schema.pop("description", None)
        return schema


class ScopedAutoSchema(DescribedAutoSchema):
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

    def _get_request_body(self, direction="request"):
        """Multipart parts declared with UploadField state the media types the server takes."""
        body = super()._get_request_body(direction)
        if body is None:
            return None
        declared = self.get_request_serializer()
        for media_type, media in body["content"].items():
            if not media_type.startswith("multipart/"):
                continue
            serializer = declared.get(media_type) if isinstance(declared, dict) else declared
            if isinstance(serializer, OpenApiRequest):
                serializer = serializer.request
            if not is_serializer(serializer):
                continue
            for name, field in force_instance(serializer).fields.items():
                content_types = getattr(field, "content_types", None)
                if content_types:
                    media.setdefault("encoding", {}).setdefault(name, {})["contentType"] = ", ".join(content_types)
        return body

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
        # Lists validate limit and cursor; any GET that reads query parameters validates them (unknown
        # names included) and answers 422 when they break a rule.
        reads_query = any(param.get("in") == "query" for param in operation.get("parameters", []))
        if self.method == "GET" and (self._is_list_view() or reads_query):
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
    """Preprocessing hook: document /api/v1, the visitor API /api/visitor/v1 and the compat routes
    (not the schema view itself). Test-only routes exist only under the test URLconf and are
    documented there so contract tests can read them."""
    from django.conf import settings

    include_test = getattr(settings, "SCHEMA_INCLUDE_TEST_ROUTES", False)
    return [
        (path, path_regex, method, callback)
        for path, path_regex, method, callback in endpoints
        if (
            path.startswith("/api/v1/") or path.startswith("/api/visitor/v1/") or path.startswith("/api/compat/legacy/")
        )
        and not path.startswith("/api/v1/schema")
        and (include_test or not path.startswith("/api/v1/_test"))
    ]


def _drop_unsatisfiable_alternatives(node) -> None:
    """`oneOf: [{}, {type: null}]` (what a nullable JSONField becomes) is never satisfied by null,
    which matches both branches: an alternative list with an any-value branch means any value."""
    if isinstance(node, dict):
        for key in ("oneOf", "anyOf"):
            if key in node and any(branch == {} for branch in node[key]):
                del node[key]
        for value in node.values():
            _drop_unsatisfiable_alternatives(value)
    elif isinstance(node, list):
        for value in node:
            _drop_unsatisfiable_alternatives(value)


_SUBSCHEMA_LISTS = ("oneOf", "anyOf", "allOf", "prefixItems")
_SUBSCHEMAS = ("items", "not", "additionalProperties", "schema")


def _close(node, schemas: dict, seen: set[str]) -> None:
    """Close `node` (a schema) and the schemas inside it."""
    if not isinstance(node, dict):
        return
    ref = node.get("$ref", "")
    if ref.startswith("#/components/schemas/"):
        name = ref.rsplit("/", 1)[-1]
        # Only request-side components (COMPONENT_SPLIT_REQUEST names them `...Request`): a shared
        # response shape stays open to additive changes.
        if name.endswith("Request") and name not in seen and name in schemas:
            seen.add(name)
            _close(schemas[name], schemas, seen)
        return
    if isinstance(node.get("properties"), dict):
        node.setdefault("additionalProperties", False)
        for value in node["properties"].values():
            _close(value, schemas, seen)
    for key in _SUBSCHEMA_LISTS:
        for value in node.get(key, ()):
            _close(value, schemas, seen)
    for key in _SUBSCHEMAS:
        _close(node.get(key), schemas, seen)


def _close_request_objects(result) -> None:
    """Input serializers refuse members they do not declare (422): every object with declared
    members in a request body, inline or a component, nested included, says so
    (`additionalProperties: false`). Free-form objects (`attributes`) declare no members."""
    schemas = result.get("components", {}).get("schemas", {})
    seen: set[str] = set()
    for name, schema in schemas.items():
        if name.endswith("Request"):
            seen.add(name)
            _close(schema, schemas, seen)
    for item in result.get("paths", {}).values():
        for operation in item.values():
            if isinstance(operation, dict) and "requestBody" in operation:
                for media in operation["requestBody"].get("content", {}).values():
                    _close(media.get("schema"), schemas, seen)


def add_problem_components(result, generator, request, public):
    """Postprocessing hook: the shared Problem schema and one response per problem status; paths
    as the spec writes them (routes accept an optional trailing slash, documented without); no
    alternatives that a valid value cannot satisfy."""
    _drop_unsatisfiable_alternatives(result)
    result["paths"] = {
        (path.rstrip("/") if path != "/" else path): item for path, item in result.get("paths", {}).items()
    }
    components = result.setdefault("components", {})
    _close_request_objects(result)
    extra = problem_components()
    components.setdefault("schemas", {}).update(extra["schemas"])
    components.setdefault("responses", {}).update(extra["responses"])
    return result
