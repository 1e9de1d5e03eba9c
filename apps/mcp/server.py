"""The SDK's low-level MCP server wired to the registry: tools listed by the caller's scopes, tool
calls and resource reads run in a worker thread (an HTTP request's own: RequestThread) through
their REST twins (apps.mcp.registry).

The caller is the bearer token: over HTTP the one apps.mcp.asgi authenticated for the very request
(the session cannot change hands: the SDK binds it to that token), over stdio the one the command was
started with. The token is resolved again, in the worker thread, on every list and call, so a
revocation or a change of its scopes applies to the next message.

A refusal is an MCP tool error (`isError: true`) whose text is the problem's JSON object: `code`,
`detail`, `status`, `errors` when fields were named, and the problem's other members.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import re
from collections import deque
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any

import anyio
import mcp_types as types
from django.db import close_old_connections
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

from apps.core.errors import AppError

from . import registry
from .registry import Context, Tool, ToolRefused

NAME = "chat-widget"
CALLER = "chatwidget.mcp_caller"  # the ASGI scope key of an HTTP request's (credential, environ) (apps.mcp.asgi)
REQUEST_THREAD = "chatwidget.mcp_request_thread"  # the ASGI scope key of an HTTP request's RequestThread
INSTRUCTIONS = (
    "Tools of one website's chat widget: read and answer its visitors' chats, look up contacts, canned "
    "responses, the knowledge base and statistics. Every tool acts as the API token you were given, within "
    "its scopes; a refusal is a tool error whose text is a JSON object with `code`, `detail` and `status` "
    "(and `errors` per argument). Pass `idempotency_key` to a tool that changes something when you may retry it."
)


def _version() -> str:
    from django.conf import settings

    return getattr(settings, "SPECTACULAR_SETTINGS", {}).get("VERSION", "")


def _in_thread(credential: str, environ: Mapping[str, str], work, *args) -> Any:
    """Run `work(context, *args)` as the WSGI server runs a request: this thread's stale database
    connections closed before and after (its request signals do the same)."""
    close_old_connections()
    try:
        context = Context.authenticate(credential, environ)
        return work(context, *args)
    finally:
        close_old_connections()


async def _thread(credential: str, environ: Mapping[str, str], work, *args) -> Any:
    return await anyio.to_thread.run_sync(partial(_in_thread, credential, environ, work, *args))


class RequestThread:
    """The one thread of an HTTP request's synchronous work, as Django's ASGI handler gives each
    request one (asgiref's thread-sensitive mode): apps.mcp.asgi authenticates the request on it,
    and the tool call or list the request carries runs on it too, on the database connection the
    authentication took. So a request takes one connection from the pool (and pays its health check)
    instead of one for the token and another for the tool.

    `close()` returns the connection from this thread after its work, without waiting for it. Work
    that comes after (a session's call whose request has already ended) runs as the stdio server's
    does, on a worker thread of its own (`_thread`). A thread whose work is done waits for the next
    request (at most IDLE_KEPT of them): starting one for each request costs about what the second
    connection did."""

    IDLE_KEPT = 32
    _idle: deque[ThreadPoolExecutor] = deque()  # deque's append and pop are atomic: no lock

    def __init__(self):
        try:
            self._executor = self._idle.pop()
        except IndexError:
            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="mcp-request")
        self.open = True

    async def run(self, func, *args) -> Any:
        """`func(*args)` on this thread, with the caller's context variables (as asyncio.to_thread)."""
        context = contextvars.copy_context()
        return await asyncio.get_running_loop().run_in_executor(self._executor, partial(context.run, func, *args))

    def close(self) -> None:
        if not self.open:
            return
        self.open = False
        executor = self._executor
        # Queued after any work still running on the thread (a call whose client went away); the
        # thread waits for another request only once all of it is done.
        executor.submit(close_old_connections).add_done_callback(lambda _: self._release(executor))

    @classmethod
    def _release(cls, executor: ThreadPoolExecutor) -> None:
        if len(cls._idle) < cls.IDLE_KEPT:
            cls._idle.append(executor)
        else:
            executor.shutdown(wait=False)


def _on_request_thread(credential: str, environ: Mapping[str, str], work, *args) -> Any:
    """Run `work(context, *args)` on the request's thread: its connection is the one the request's
    authentication opened, and RequestThread.close() returns it."""
    return work(Context.authenticate(credential, environ), *args)


def problem_of(err: AppError) -> dict:
    problem: dict[str, Any] = {"code": err.code, "detail": err.detail, "status": err.status}
    if err.errors:
        problem["errors"] = err.errors
    problem.update(err.extra)
    return problem


def tool_result(text: str, *, structured_content: dict | None = None, is_error: bool = False) -> dict:
    """A `tools/call` result in its wire form. The SDK validates a handler's result against the
    protocol's CallToolResult either way; a dict spares building that model here (the whole answer
    of the route, twice: as structured content and as its JSON text) and dumping it back there."""
    result: dict[str, Any] = {"content": [{"type": "text", "text": text}], "isError": is_error}
    result["resultType"] = "complete"  # as the model dumps it; the SDK drops it for versions without it
    if structured_content is not None:
        result["structuredContent"] = structured_content
    return result


def tool_error(problem: dict) -> dict:
    return tool_result(json.dumps(problem, ensure_ascii=False), is_error=True)


def describe(tool: Tool) -> types.Tool:
    return types.Tool(
        name=tool.name,
        description=tool.description,
        input_schema=tool.input_schema,
        output_schema=tool.output_schema,
        annotations=types.ToolAnnotations(
            read_only_hint=not tool.writes,
            destructive_hint=False,
            idempotent_hint=not tool.writes,
            open_world_hint=False,
        ),
    )


def input_schema(name: str) -> dict | None:
    """The input schema of the tool `name` (None for an unknown one), for the SDK's check of a
    per-request call's `Mcp-Param-*` headers against its arguments. Without it the SDK finds the schema
    by running the `tools/list` handler for every call that has arguments: a second trip to a worker
    thread, the token resolved again and every tool described. A tool's schema is the same whatever
    the caller's scopes; a tool the token may not use is refused when the call runs."""
    tool = registry.tools().get(name)
    return tool.input_schema if tool is not None else None


def check_arguments(tool: Tool, arguments: dict) -> dict | None:
    """The problem of arguments the tool does not take or of required ones left out (the words of the
    REST API's own validation), or None. Everything else is the REST route's to validate."""
    properties = tool.input_schema.get("properties", {})
    errors: dict[str, list[str]] = {}
    for name in arguments:
        if name not in properties:
            errors[name] = [f"Unknown argument; {tool.name} takes: {', '.join(properties) or 'none'}."]
    for name in tool.input_schema.get("required", ()):
        if name not in arguments:
            errors[name] = ["This field is required."]
    if not errors:
        return None
    return {"code": "validation_failed", "detail": "Validation failed", "status": 422, "errors": errors}


def structured(tool: Tool, result: Any) -> dict | None:
    if tool.output_schema is None:
        return None
    props = tool.output_schema.get("properties", {})
    if isinstance(result, dict) and set(props) != {"result"}:
        return result
    return {"result": result}


def missing_scope(what: str, missing: list[list[str]]) -> dict:
    alternatives = " and ".join(" or ".join(any_of) for any_of in missing)
    return {
        "code": "missing_scope",
        "detail": f"{what} needs {alternatives}; this token has none of them.",
        "status": 403,
        "required_scopes": sorted({scope for any_of in missing for scope in any_of}),
    }


def _call_tool(context: Context, tool: Tool, arguments: dict) -> dict:
    missing = tool.missing(context.token.scopes)
    if missing:
        return tool_error(missing_scope(f"The tool {tool.name}", missing))
    refusal = check_arguments(tool, arguments)
    if refusal is not None:
        return tool_error(refusal)
    try:
        result = tool.run(context, arguments)
    except ToolRefused as refused:
        return tool_error(refused.problem)
    return tool_result(json.dumps(result, ensure_ascii=False, default=str), structured_content=structured(tool, result))


def _template_regex(template: str) -> re.Pattern:
    parts = re.split(r"\{(\w+)\}", template)
    pattern = "".join(re.escape(part) if i % 2 == 0 else f"(?P<{part}>[^/?#]+)" for i, part in enumerate(parts))
    return re.compile(f"^{pattern}$")


def _read_resource(context: Context, resource: registry.Resource, params: dict, uri: str) -> types.ReadResourceResult:
    missing = resource.missing(context.token.scopes)
    if missing:
        problem = missing_scope(f"The resource {resource.uri_template}", missing)
        raise MCPError(types.INVALID_PARAMS, problem["detail"], problem)
    try:
        text = resource.read(context, params)
    except ToolRefused as refused:
        raise MCPError(types.INVALID_PARAMS, refused.problem.get("detail", ""), refused.problem) from None
    contents = types.TextResourceContents(uri=uri, mime_type=resource.mime_type, text=text)
    return types.ReadResourceResult(contents=[contents])


def caller_of(request: Any) -> tuple[str, dict[str, str]]:
    """The credential and the client's environ an HTTP request carries (apps.mcp.asgi put them in its scope)."""
    scope = getattr(request, "scope", None) or {}
    caller = scope.get(CALLER)
    if caller is None:
        raise MCPError(types.INVALID_REQUEST, "Send `Authorization: Bearer <token>`.")
    return caller


def build(credential: str | None = None, environ: Mapping[str, str] | None = None) -> Server:
    """The MCP server. With `credential` every message acts as that token (stdio, in-process tests);
    without, each HTTP request's own token (apps.mcp.asgi)."""
    fixed = (credential, dict(environ or {})) if credential is not None else None

    def caller(ctx) -> tuple[str, dict[str, str]]:
        return fixed if fixed is not None else caller_of(ctx.request)

    async def authenticated(ctx, work, *args):
        credential, env = caller(ctx)
        thread = (getattr(ctx.request, "scope", None) or {}).get(REQUEST_THREAD)
        try:
            if thread is not None and thread.open:
                return await thread.run(_on_request_thread, credential, env, work, *args)
            return await _thread(credential, env, work, *args)
        except AppError as err:  # the token stopped authenticating since the request came in
            raise MCPError(types.INVALID_REQUEST, err.detail, problem_of(err)) from None

    async def list_tools(ctx, params) -> types.ListToolsResult:
        def listed(context: Context) -> list[types.Tool]:
            scopes = frozenset(context.token.scopes)
            return [describe(tool) for tool in registry.tools().values() if tool.allowed(scopes)]

        return types.ListToolsResult(tools=await authenticated(ctx, listed))

    async def call_tool(ctx, params: types.CallToolRequestParams) -> dict:
        tool = registry.tools().get(params.name)
        if tool is None:
            raise MCPError(types.INVALID_PARAMS, f"Unknown tool: {params.name}")
        try:
            return await authenticated(ctx, _call_tool, tool, dict(params.arguments or {}))
        except MCPError as refused:
            if isinstance(refused.data, dict) and "code" in refused.data:
                return tool_error(refused.data)
            raise

    async def list_resources(ctx, params) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=[])

    async def list_resource_templates(ctx, params) -> types.ListResourceTemplatesResult:
        def listed(context: Context) -> list[types.ResourceTemplate]:
            scopes = frozenset(context.token.scopes)
            return [
                types.ResourceTemplate(
                    name=resource.name,
                    uri_template=resource.uri_template,
                    description=resource.description,
                    mime_type=resource.mime_type,
                )
                for resource in registry.resources().values()
                if resource.allowed(scopes)
            ]

        return types.ListResourceTemplatesResult(resource_templates=await authenticated(ctx, listed))

    async def read_resource(ctx, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        uri = str(params.uri)
        for resource in registry.resources().values():
            match = _template_regex(resource.uri_template).match(uri)
            if match:
                return await authenticated(ctx, _read_resource, resource, match.groupdict(), uri)
        raise MCPError(types.INVALID_PARAMS, f"Unknown resource: {uri}", {"code": "not_found", "status": 404})

    return Server(
        NAME,
        version=_version(),
        title="Chat widget",
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_resource_templates,
        on_read_resource=read_resource,
        get_tool_input_schema=input_schema,
    )


async def serve_stdio(credential: str) -> None:
    """Serve MCP over this process's stdin and stdout as the token `credential`."""
    server = build(credential, {"REMOTE_ADDR": "127.0.0.1"})
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())
