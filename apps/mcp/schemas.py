"""JSON Schemas of tools from the OpenAPI document drf-spectacular generates for the REST API: a
route's parameters and request body make a tool's input, its success response the output. The same
serializers describe both, so a tool's schema cannot drift from its REST twin's.

The document is generated once per process (about a second) and cached; the schemas handed out are
self-contained: every `$ref` is inlined, except a recursive one, which points into `$defs`.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .registry import Call

_document: dict | None = None
_lock = threading.Lock()

IDEMPOTENCY_KEY = {
    "type": "string",
    "minLength": 1,
    "maxLength": 64,
    "description": (
        "Optional. A unique string (a UUID) naming this one change, for a retry after a timeout: a call "
        "with a key already used changes nothing and is refused with idempotency_key_reused (409)."
    ),
}


def document() -> dict:
    """The OpenAPI document of the public REST API (what /api/v1/schema serves)."""
    global _document
    if _document is None:
        with _lock:
            if _document is None:
                from drf_spectacular.generators import SchemaGenerator

                _document = SchemaGenerator().get_schema(request=None, public=True)
    return _document


def operation(call: Call) -> dict:
    """The OpenAPI operation of `call`; LookupError when the document has no such route."""
    try:
        return document()["paths"][call.path][call.method.lower()]
    except KeyError:
        raise LookupError(f"the REST API has no operation {call.method} {call.path}") from None


def _pointer(ref: str) -> Any:
    node: Any = document()
    for part in ref.removeprefix("#/").split("/"):
        node = node[part.replace("~1", "/").replace("~0", "~")]
    return node


def resolve(node: Any) -> Any:
    """`node` with every `$ref` into the document inlined; a recursive one points into `$defs`."""
    recursive: dict[str, str] = {}  # $defs name -> the document's ref
    result = _inline(node, (), recursive)
    if recursive and isinstance(result, dict):
        defs: dict[str, Any] = {}
        while len(defs) < len(recursive):
            for name, ref in list(recursive.items()):
                if name not in defs:
                    defs[name] = _inline(_pointer(ref), (ref,), recursive)
        result = {**result, "$defs": defs}
    return result


def _inline(node: Any, stack: tuple[str, ...], recursive: dict[str, str]) -> Any:
    if isinstance(node, list):
        return [_inline(item, stack, recursive) for item in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if not (isinstance(ref, str) and ref.startswith("#/")):
        return {key: _inline(value, stack, recursive) for key, value in node.items()}
    name = ref.rsplit("/", 1)[-1]
    siblings = {key: _inline(value, stack, recursive) for key, value in node.items() if key != "$ref"}
    if ref in stack:
        recursive[name] = ref
        return {"$ref": f"#/$defs/{name}", **siblings}
    target = _inline(_pointer(ref), (*stack, ref), recursive)
    return {**target, **siblings} if isinstance(target, dict) else target


def _json_body_schema(op: dict) -> dict | None:
    content = (op.get("requestBody") or {}).get("content") or {}
    media = content.get("application/json")
    return resolve(media["schema"]) if media and "schema" in media else None


def input_for(
    call: Call,
    *,
    include: list[str] | tuple[str, ...] | None = None,
    exclude: list[str] | tuple[str, ...] | None = None,
    extra: dict[str, dict] | None = None,
) -> dict:
    """The input schema of a tool calling `call`: one object whose properties are the route's path
    and query parameters and its JSON body's members (`include` keeps only those named, `exclude`
    drops some, `extra` adds or replaces properties). Required: the route's required ones."""
    op = operation(call)
    properties: dict[str, dict] = {}
    required: list[str] = []
    for parameter in op.get("parameters", []):
        parameter = resolve(parameter)
        if parameter.get("in") not in {"path", "query"}:
            continue
        schema = dict(parameter.get("schema") or {})
        if parameter.get("description") and "description" not in schema:
            schema["description"] = parameter["description"]
        properties[parameter["name"]] = schema
        if parameter.get("required"):
            required.append(parameter["name"])
    body = _json_body_schema(op)
    if body is not None:
        for name, schema in (body.get("properties") or {}).items():
            if name in properties:
                raise ValueError(f"{call.method} {call.path}: {name!r} is both a parameter and a body member")
            if schema.get("readOnly"):
                continue
            properties[name] = schema
        if (op.get("requestBody") or {}).get("required", False) or body.get("required"):
            required.extend(body.get("required") or [])
    if include is not None:
        unknown = set(include) - set(properties)
        if unknown:
            raise ValueError(f"{call.method} {call.path} has no input {sorted(unknown)}")
        properties = {name: properties[name] for name in include}
    for name in exclude or ():
        if name not in properties:
            raise ValueError(f"{call.method} {call.path} has no input {name!r}")
        properties.pop(name)
    properties.update(extra or {})
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    kept = [name for name in dict.fromkeys(required) if name in properties]
    if kept:
        schema["required"] = kept
    return schema


def with_idempotency_key(schema: dict) -> dict:
    """`schema` (an object's) with the optional `idempotency_key` argument of a write tool."""
    properties = {**schema.get("properties", {}), "idempotency_key": IDEMPOTENCY_KEY}
    return {**schema, "properties": properties}


def output_for(call: Call, status: int = 200) -> dict | None:
    """The schema of the route's JSON answer with `status`, self-contained; None when it has no body.
    MCP's structured content is an object: an answer that is not one is wrapped by the server, so its
    schema is too (`{"result": ...}`)."""
    op = operation(call)
    response = op.get("responses", {}).get(str(status))
    if response is None:
        raise LookupError(f"{call.method} {call.path} documents no {status} answer")
    response = resolve(response)
    media = (response.get("content") or {}).get("application/json")
    if not media or "schema" not in media:
        return None
    schema = media["schema"]
    return schema if schema.get("type") == "object" or "properties" in schema else wrap_output(schema)


def wrap_output(schema: dict) -> dict:
    return {"type": "object", "properties": {"result": schema}, "required": ["result"]}
