"""`/mcp`: the MCP server on Streamable HTTP (the SDK's session manager), mounted by config/asgi.py
in front of Django.

Every request is authenticated as the REST API authenticates (apps.core.auth.authentication: the
`Authorization: Bearer` header only, a token in the query string refused): without a valid token it
is answered 401 problem+json, with the widget's API turned off 403 `api_disabled`, before the SDK
sees it. The SDK binds a session to the token that opened it (another token's request on it is
answered 404, as an unknown session is).

Sessions are shared by the web server's processes and replicas (apps.mcp.manager, apps.mcp.sessions):
a session opened by one process is served by whichever receives its next request, and a stream is
resumed (`Last-Event-ID`) on any of them.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator

from django.conf import settings
from django.db import close_old_connections
from django.http import QueryDict
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER

from apps.core.auth.authentication import RESOLVED_TOKEN, BearerTokenAuthentication
from apps.core.errors import PROBLEM_CONTENT_TYPE, ApiDisabled, AppError, ServiceUnavailable, problem_body

from . import registry, server
from .manager import SESSION_LOOKUP, SharedSessionManager
from .sessions import Registry

logger = logging.getLogger(__name__)

PATH = "/mcp"


class _Shim:
    """What BearerTokenAuthentication reads of a request: its META and its query parameters."""

    def __init__(self, meta: dict[str, str]):
        self.META = meta
        self.query_params = QueryDict(meta.get("QUERY_STRING", ""))


def _environ(scope) -> dict[str, str]:
    """The parts of the client's request the in-process REST requests carry (its address, host,
    scheme and the proxy's forwarding headers), so they are logged, limited and checked as the
    client's own."""
    headers = {name.decode("latin-1").lower(): value.decode("latin-1") for name, value in scope.get("headers", ())}
    client = scope.get("client") or ("127.0.0.1", 0)
    server_addr = scope.get("server") or ("localhost", 80)
    environ = {
        "REMOTE_ADDR": str(client[0]),
        "SERVER_NAME": str(server_addr[0]),
        "SERVER_PORT": str(server_addr[1]),
        "wsgi.url_scheme": scope.get("scheme", "http"),
        "QUERY_STRING": scope.get("query_string", b"").decode("latin-1"),
    }
    for name in ("host", "x-forwarded-for", "x-forwarded-proto", "x-forwarded-host", "authorization"):
        if name in headers:
            environ["HTTP_" + name.upper().replace("-", "_")] = headers[name]
    return environ


def _authenticate(meta: dict[str, str]):
    """The request's token, on the request's thread (server.RequestThread), which returns the
    database connection when the request ends. The thread's stale connections are closed first, as
    Django's request_started signal closes them."""
    close_old_connections()
    _, token = BearerTokenAuthentication().authenticate(_Shim(meta))
    if not token.widget.api_enabled:
        raise ApiDisabled("Enable “Allow widget API (JS and REST)” for this widget in the cabinet.")
    return token


async def _problem(err: AppError, scope, send) -> None:
    body = json.dumps(problem_body(err, instance=scope.get("path", PATH)), ensure_ascii=False).encode()
    headers = [(b"content-type", PROBLEM_CONTENT_TYPE.encode()), (b"content-length", str(len(body)).encode())]
    if err.status == 401:
        headers.append((b"www-authenticate", BearerTokenAuthentication().authenticate_header(None).encode()))
    headers.extend((name.lower().encode(), value.encode()) for name, value in err.headers.items())
    await send({"type": "http.response.start", "status": err.status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _report_load(done: asyncio.Future) -> None:
    if not done.cancelled() and done.exception() is not None:
        # A broken tool definition: every MCP request fails on it too; said once, at start.
        logger.error("the MCP tools could not be loaded", exc_info=done.exception())


class McpApp:
    """The ASGI application of /mcp: authentication, then the SDK's session manager with the
    sessions of `sessions` (by default, the registry every process shares)."""

    def __init__(self, sessions: Registry | None = None):
        self.server = server.build()
        self.sessions = sessions or Registry()
        self.manager: SharedSessionManager | None = None

    @contextlib.asynccontextmanager
    async def run(self) -> AsyncIterator[None]:
        """A session manager for the server's life (config.asgi's lifespan; a manager runs once).
        The tools' schemas are built meanwhile, off the event loop, so the first client does not
        wait for them."""
        manager = SharedSessionManager(
            self.server,
            registry=self.sessions,
            max_request_body_size=settings.API_MAX_BODY_BYTES,
        )
        async with manager.run():
            self.manager = manager
            warm = asyncio.get_running_loop().run_in_executor(None, registry.load)
            warm.add_done_callback(_report_load)
            try:
                yield
            finally:
                self.manager = None
                await asyncio.wait([warm])

    async def __call__(self, scope, receive, send) -> None:
        thread = server.RequestThread()
        try:
            await self._serve(scope, receive, send, thread)
        finally:
            thread.close()

    async def _serve(self, scope, receive, send, thread: server.RequestThread) -> None:
        environ = _environ(scope)
        lookup = self._look_up_session(scope)
        try:
            token = await thread.run(_authenticate, environ)
        except AppError as err:
            _drop(lookup)
            await _problem(err, scope, send)
            return
        manager = self.manager
        if manager is None:
            _drop(lookup)
            await _problem(ServiceUnavailable("The MCP server is not running in this process."), scope, send)
            return
        credential = environ.pop("HTTP_AUTHORIZATION").partition(" ")[2].strip()
        environ.pop("QUERY_STRING")
        # The token read above serves the whole request: its tools' REST calls reuse it.
        environ[RESOLVED_TOKEN] = (credential, token)
        scope = {
            **scope,
            "user": AuthenticatedUser(
                AccessToken(token=credential, client_id=f"token-{token.pk}", scopes=token.scopes)
            ),
            server.CALLER: (credential, environ),
            server.REQUEST_THREAD: thread,
        }
        if lookup is not None:
            scope[SESSION_LOOKUP] = lookup
        await manager.handle_request(scope, receive, send)

    def _look_up_session(self, scope) -> asyncio.Task | None:
        """The registry's entry of the session the request names, looked up while its token is
        checked (two round trips to two servers, each in a worker thread, instead of one after the
        other); the manager awaits it (SESSION_LOOKUP) once the request is authenticated."""
        for name, value in scope.get("headers", ()):
            if name.lower() == MCP_SESSION_ID_HEADER.encode():
                lookup = asyncio.ensure_future(self.sessions.get(value.decode("latin-1")))
                # A request refused before the manager reads it leaves its failure (the store out of
                # reach) unread; the manager's await still raises it.
                lookup.add_done_callback(lambda done: done.cancelled() or done.exception())
                return lookup
        return None


def _drop(lookup: asyncio.Task | None) -> None:
    """The lookup of a request refused before the manager reads it."""
    if lookup is not None:
        lookup.cancel()


def is_mcp(scope) -> bool:
    return scope["type"] == "http" and (scope["path"] == PATH or scope["path"] == PATH + "/")
