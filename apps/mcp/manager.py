"""The SDK's session manager, with sessions that any web process (or replica) serves.

The SDK keeps a session in the memory of the process that opened it: its transport (the streams of
its requests) and the task that serves it. This manager keeps all of that, and adds what every
process shares (apps.mcp.sessions): the registry of open sessions and their streams' events.

- A session opened here is registered before the answer to its `initialize` starts, so the client
  cannot name it to another process before that process can find it.
- A request for a session is checked against the registry first, wherever the session is held: an
  ended or expired session is 404 (and forgotten here if this process held it); another token's is
  404, as an unknown one is. While a request runs (an event stream may run for long) the session's
  expiry moves on; if the session ends meanwhile (a DELETE on another process) it ends here too.
- A session the registry knows and this process does not hold is adopted: a transport with its id
  and the session's event store, served by a task whose connection is born initialised with the
  protocol version and client parameters of the session's handshake (as the SDK's stateless path
  builds its connections), so the request is answered as the opening process would answer it.
- DELETE removes the session from the registry before its answer starts.
"""

from __future__ import annotations

import json
import logging
from functools import partial
from uuid import uuid4

import anyio
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser, AuthorizationContext, authorization_context
from mcp.server.connection import Connection
from mcp.server.runner import serve_connection
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER, StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.shared.jsonrpc_dispatcher import JSONRPCDispatcher
from mcp_types import INTERNAL_ERROR, INVALID_REQUEST, ErrorData, InitializeRequestParams, JSONRPCError
from pydantic import ValidationError
from starlette.datastructures import Headers
from starlette.responses import Response

from .sessions import Registry, Session, SessionEvents

logger = logging.getLogger(__name__)

# The ASGI scope key of a request's session lookup already under way: an awaitable of the registry's
# entry (Registry.get) of the session its Mcp-Session-Id header names.
SESSION_LOOKUP = "chatwidget.mcp_session_lookup"


def _owner(scope) -> str | None:
    user = scope.get("user")
    return user.access_token.client_id if isinstance(user, AuthenticatedUser) else None


def _error(message: str, status: int, code: int = INVALID_REQUEST) -> Response:
    """The SDK manager's own refusal: a JSON-RPC error without a request id."""
    body = JSONRPCError(jsonrpc="2.0", id=None, error=ErrorData(code=code, message=message))
    return Response(body.model_dump_json(by_alias=True, exclude_unset=True), status, media_type="application/json")


def _initialize_params(body: bytes) -> dict | None:
    """The handshake's parameters kept with the session (those a connection records)."""
    try:
        params = json.loads(body).get("params")
    except (ValueError, AttributeError):
        return None
    if not isinstance(params, dict):
        return None
    return {name: params[name] for name in ("protocolVersion", "capabilities", "clientInfo") if name in params}


class SharedSessionManager(StreamableHTTPSessionManager):
    """StreamableHTTPSessionManager whose stateful sessions live in `registry` for every process.

    The seam into the SDK (mcp 2.3.0), all of it in this class: sessions must survive the web
    server's several processes, and the SDK's manager has no hook for a session it did not open.
    It overrides `_handle_stateful_request` (the registry's checks around the SDK's own handling)
    and `_admit_session` (a new session's transport gets the session's own event store: the SDK
    gives every session the manager's one store, whose streams are named by request ids, which
    every session reuses), and an adopted session joins the manager's `_server_instances` /
    `_session_owners` under its `_session_creation_lock`, is served in its `_task_group` with its
    `_lifespan_state`, and is dropped by its `_discard_session`, as the SDK's own sessions are."""

    def __init__(self, app, *, registry: Registry, **kwargs):
        super().__init__(app, session_idle_timeout=registry.idle, **kwargs)
        self.registry = registry

    def _transport(self, session_id: str) -> StreamableHTTPServerTransport:
        return StreamableHTTPServerTransport(
            mcp_session_id=session_id,
            is_json_response_enabled=self.json_response,
            event_store=SessionEvents(session_id),
            security_settings=self.security_settings,
            retry_interval=self.retry_interval,
            idle_timeout=self.session_idle_timeout,
        )

    def _admit_session(self, requestor: AuthorizationContext | None) -> StreamableHTTPServerTransport | None:
        if self.max_sessions is not None and len(self._server_instances) >= self.max_sessions:
            return None
        transport = self._transport(uuid4().hex)
        session_id = transport.mcp_session_id
        if requestor is not None:
            self._session_owners[session_id] = requestor
        self._server_instances[session_id] = transport
        return transport

    async def _handle_stateful_request(self, scope, receive, send) -> None:
        session_id = Headers(scope=scope).get(MCP_SESSION_ID_HEADER)
        owner = _owner(scope)
        if session_id is None:
            await self._open(owner, scope, receive, send)
            return
        lookup = scope.get(SESSION_LOOKUP)  # started with the request's authentication (apps.mcp.asgi)
        session = await (lookup if lookup is not None else self.registry.get(session_id))
        if session is None and (held := self._server_instances.get(session_id)) is not None:
            await self._discard_session(session_id, held)  # ended on another process, or expired
        if session is None or session.owner != owner:
            await _error("Session not found", 404)(scope, receive, send)
            return
        if not await self._adopt(session_id, session, scope):
            await _error("Too many open sessions", 503, INTERNAL_ERROR)(scope, receive, send)
            return
        ending = scope["method"] == "DELETE"

        async def answer(message) -> None:
            if ending and message["type"] == "http.response.start" and message["status"] == 200:
                await self.registry.end(session_id)
            await send(message)

        async with anyio.create_task_group() as running:
            running.start_soon(self._keep_open, session_id)
            await super()._handle_stateful_request(scope, receive, answer)
            running.cancel_scope.cancel()
        if not ending:
            await self.registry.touch(session_id)  # the idle time counts from the end of the last request

    async def _open(self, owner: str | None, scope, receive, send) -> None:
        """The SDK opens the session (or refuses the request); an opened one is registered before
        its first answer starts."""
        body = bytearray()

        async def reading():
            message = await receive()
            if message["type"] == "http.request":
                body.extend(message.get("body", b""))
            return message

        async def answer(message) -> None:
            if message["type"] == "http.response.start" and message["status"] < 400:
                session_id = Headers(raw=message.get("headers", [])).get(MCP_SESSION_ID_HEADER)
                if session_id is not None:
                    await self.registry.open(session_id, owner, _initialize_params(bytes(body)))
            await send(message)

        await super()._handle_stateful_request(scope, reading, answer)

    async def _keep_open(self, session_id: str) -> None:
        """The session's expiry moves on while a long request runs (its start found the session open,
        its end moves the expiry on); ended elsewhere meanwhile, it ends here."""
        while True:
            await anyio.sleep(self.registry.idle / 3)
            if not await self.registry.touch(session_id, force=True):
                if (held := self._server_instances.get(session_id)) is not None:
                    await self._discard_session(session_id, held)
                return

    async def _adopt(self, session_id: str, session: Session, scope) -> bool:
        """Whether this process holds the session, adopting it if need be (False: no room for it)."""
        async with self._session_creation_lock:
            if session_id in self._server_instances:
                return True
            if self.max_sessions is not None and len(self._server_instances) >= self.max_sessions:
                return False
            transport = self._transport(session_id)
            user = scope.get("user")
            if isinstance(user, AuthenticatedUser):
                self._session_owners[session_id] = authorization_context(user)
            self._server_instances[session_id] = transport
            try:
                # Started under the lock: a concurrent request finds the transport connected.
                await self._task_group.start(partial(self._serve_adopted, transport, session))
            except BaseException:
                await self._discard_session(session_id, transport)
                raise
            logger.info("Adopted session %s", session_id)
            return True

    async def _serve_adopted(
        self, transport: StreamableHTTPServerTransport, session: Session, *, task_status=anyio.TASK_STATUS_IGNORED
    ) -> None:
        session_id = transport.mcp_session_id
        async with transport.connect() as (read_stream, write_stream):
            task_status.started()
            try:
                # As the SDK's own sessions: the transport's idle scope ends this task.
                with transport.idle_scope or anyio.CancelScope():
                    dispatcher = JSONRPCDispatcher(read_stream, write_stream, inline_methods=frozenset({"initialize"}))
                    peer = Connection.for_loop(  # the MCP client's connection (not a database's)
                        dispatcher, session_id=session_id, protocol_version_hint=session.protocol_version
                    )
                    peer.client_params = _client_params(session)
                    peer.initialized.set()
                    await serve_connection(self.app, dispatcher, connection=peer, lifespan_state=self._lifespan_state)
            except Exception:
                logger.exception("Session %s crashed", session_id)
            finally:
                await self._discard_session(session_id, transport)


def _client_params(session: Session) -> InitializeRequestParams | None:
    try:
        return InitializeRequestParams.model_validate(session.client_params or {}, by_name=False)
    except ValidationError:
        return None
