"""What the MCP server offers: tools and resources, each a thin call of its REST twin(s).

A tool names the REST routes it calls (`Call`); its scopes are those routes' own (`x-scopes` of the
OpenAPI document, i.e. the views' `route_scopes`), never restated here. `Context.call` runs a route
in-process through the REST API's whole request path (apps.mcp.dispatch), so authentication, scopes,
the token's rate limit, idempotency, validation, services, audit and events are the route's own.
"""

from __future__ import annotations

import dataclasses
import importlib
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from apps.core.auth.authentication import RESOLVED_TOKEN, BearerTokenAuthentication
from apps.core.models import ApiToken, Widget

from . import dispatch, schemas


@dataclass(frozen=True)
class Call:
    """One REST route a tool or resource uses."""

    method: str  # "GET"
    path: str  # "/api/v1/chats/{id}" (the OpenAPI path template)

    def scopes(self) -> frozenset[str]:
        """The scopes of which any one grants this route (its operation's `x-scopes`)."""
        return frozenset(schemas.operation(self).get("x-scopes", ()))


class ToolRefused(Exception):
    """A route answered a problem: `problem` holds its members (`code`, `detail`, `status`,
    `errors` when the route named fields, and its other extension members)."""

    def __init__(self, problem: dict):
        self.problem = problem
        super().__init__(problem.get("detail") or problem.get("code") or "refused")


@dataclass
class Context:
    """One tool call (or resource read), in the worker thread: the caller's token and widget."""

    token: ApiToken
    widget: Widget
    credential: str = field(repr=False)  # the bearer token as sent, for the in-process requests
    environ: Mapping[str, str] = field(default_factory=dict, repr=False)  # the client's address, host, scheme

    @classmethod
    def authenticate(cls, credential: str, environ: Mapping[str, str] | None = None) -> Context:
        """The context of a bearer token, checked as the REST API checks it (unknown, malformed,
        expired and revoked alike: apps.core.errors.InvalidToken)."""
        resolved = (environ or {}).get(RESOLVED_TOKEN)
        if resolved is not None and resolved[0] == credential:
            token = resolved[1]  # resolved for this very HTTP request (apps.mcp.asgi)
        else:
            token = BearerTokenAuthentication.resolve(credential)
        return cls(token=token, widget=token.widget, credential=credential, environ=environ or {})

    def call(
        self,
        method: str,
        path: str,
        *,
        path_params: Mapping[str, Any] | None = None,
        query: Mapping[str, Any] | None = None,
        body: Any = None,
        idempotency_key: str | None = None,
    ) -> Any:
        """The route's JSON answer (dict or list; text for a non-JSON answer, None for 204), or
        ToolRefused with its problem."""
        answer = dispatch.request(
            credential=self.credential,
            method=method,
            path=dispatch.fill(path, path_params or {}),
            query=query,
            body=body,
            idempotency_key=idempotency_key,
            environ=self.environ,
        )
        if answer.status >= 300:
            raise ToolRefused(answer.problem())
        return answer.data


def _held(token_scopes: frozenset[str] | set[str], calls: tuple[Call, ...]) -> bool:
    return all(not call.scopes().isdisjoint(token_scopes) for call in calls)


def _missing(token_scopes: frozenset[str] | set[str], calls: tuple[Call, ...]) -> list[list[str]]:
    return [sorted(call.scopes()) for call in calls if call.scopes().isdisjoint(token_scopes)]


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    calls: tuple[Call, ...]  # every route it may call (its scopes derive from these)
    run: Callable[[Context, dict], Any]  # sync; gets the validated arguments
    input_schema: dict
    output_schema: dict | None
    writes: bool  # a write tool takes `idempotency_key`

    def allowed(self, scopes: frozenset[str] | set[str]) -> bool:
        """Whether a token with `scopes` may use it: one scope of every route it calls."""
        return _held(scopes, self.calls)

    def missing(self, scopes: frozenset[str] | set[str]) -> list[list[str]]:
        """For each route the scopes do not grant: the scopes of which any one would."""
        return _missing(scopes, self.calls)


@dataclass(frozen=True)
class Resource:
    uri_template: str  # "chat://{id}/transcript"
    name: str
    description: str
    mime_type: str
    calls: tuple[Call, ...]
    read: Callable[[Context, dict], str]  # the parameters of the template, as strings

    def allowed(self, scopes: frozenset[str] | set[str]) -> bool:
        return _held(scopes, self.calls)

    def missing(self, scopes: frozenset[str] | set[str]) -> list[list[str]]:
        return _missing(scopes, self.calls)


TOOLS: dict[str, Tool] = {}
RESOURCES: dict[str, Resource] = {}


def register(tool: Tool) -> Tool:
    """Add a tool (a write tool gets the optional `idempotency_key` argument unless it declares it)."""
    if tool.name in TOOLS:
        raise ValueError(f"tool {tool.name!r} registered twice")
    if not tool.calls:
        raise ValueError(f"tool {tool.name!r} calls no route")
    if tool.writes and "idempotency_key" not in tool.input_schema.get("properties", {}):
        tool = dataclasses.replace(tool, input_schema=schemas.with_idempotency_key(tool.input_schema))
    TOOLS[tool.name] = tool
    return tool


def register_resource(resource: Resource) -> Resource:
    if resource.uri_template in RESOURCES:
        raise ValueError(f"resource {resource.uri_template!r} registered twice")
    RESOURCES[resource.uri_template] = resource
    return resource


_loaded = threading.Lock()
_LOADED: list[bool] = []


def load() -> None:
    """Import the modules that register the tools and resources, once. Not at start-up (AppConfig):
    their schemas come from the OpenAPI document, about a second to generate, which only the
    processes serving MCP should pay (the web process warms it in its lifespan start)."""
    if _LOADED:
        return
    with _loaded:
        if not _LOADED:
            importlib.import_module("apps.mcp.tools")
            importlib.import_module("apps.mcp.resources")
            _LOADED.append(True)


def tools() -> dict[str, Tool]:
    load()
    return TOOLS


def resources() -> dict[str, Resource]:
    load()
    return RESOURCES
