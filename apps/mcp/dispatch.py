"""A REST route called in-process: the request a client would send, through Django's whole request
path (every middleware: the request context and its log line, metrics, problem+json), to the route's
own DRF view. Authentication is the REST API's (the bearer token as sent), and so are the scopes,
the token's rate limit, idempotency, validation, services, audit (the token is the actor) and events.

Built with Django's public handler API (`WSGIHandler.get_response` on a `WSGIRequest`), not the test
client. The caller runs it in a worker thread and manages that thread's database connections
(apps.mcp.server), as the WSGI server's request signals do.
"""

from __future__ import annotations

import io
import json
import threading
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode

from django.conf import settings
from django.core.handlers.wsgi import WSGIHandler, WSGIRequest

_handler: WSGIHandler | None = None
_handler_lock = threading.Lock()

USER_AGENT = "chat-widget-mcp"


def handler() -> WSGIHandler:
    """One handler per process: its middleware chain is loaded once, as a WSGI server's is."""
    global _handler
    if _handler is None:
        with _handler_lock:
            if _handler is None:
                _handler = WSGIHandler()
    return _handler


@dataclass(frozen=True)
class Answer:
    status: int
    headers: dict[str, str]
    data: Any

    def problem(self) -> dict:
        """The problem's members a tool error carries: `code`, `detail`, `status`, `errors` when
        present, and the extension members (`required_scopes`, ...); `retry_after` from a 429's
        Retry-After."""
        if self.status < 400:
            # Not an answer of the route: the request was sent elsewhere (SECURE_SSL_REDIRECT on a
            # plain-HTTP /mcp behind no TLS-terminating proxy).
            where = self.headers.get("Location", "")
            return {
                "code": "redirected",
                "detail": f"The API redirects this request to {where}: connect to /mcp at that address (HTTPS).",
                "status": self.status,
            }
        body = self.data if isinstance(self.data, dict) else {}
        problem = {
            "code": body.get("code") or "error",
            "detail": body.get("detail") or body.get("title") or (self.data if isinstance(self.data, str) else ""),
            "status": self.status,
        }
        problem.update({k: v for k, v in body.items() if k not in {"type", "title", "instance", *problem}})
        if "Retry-After" in self.headers and "retry_after" not in problem:
            problem["retry_after"] = int(self.headers["Retry-After"])
        return problem


def default_host() -> str:
    """A host the REST API accepts (ALLOWED_HOSTS), for a caller that came with none (stdio); an
    HTTP caller's requests carry its own Host."""
    for allowed in settings.ALLOWED_HOSTS:
        if allowed == "*":
            break
        return allowed.lstrip(".")
    return "localhost"


def fill(template: str, params: dict[str, Any]) -> str:
    """The path of an OpenAPI path template with its parameters (each quoted as one segment)."""
    path = template
    for name, value in params.items():
        placeholder = "{" + name + "}"
        if placeholder not in path:
            raise ValueError(f"{template} has no parameter {name!r}")
        path = path.replace(placeholder, quote(str(value), safe=""))
    if "{" in path:
        raise ValueError(f"{template}: parameters missing in {path}")
    return path


def _query_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _query_string(query: dict[str, Any] | None) -> str:
    pairs: list[tuple[str, str]] = []
    for name, value in (query or {}).items():
        if value is None:
            continue
        values = value if isinstance(value, list | tuple) else [value]
        pairs.extend((name, _query_value(v)) for v in values)
    return urlencode(pairs)


def request(
    *,
    credential: str,
    method: str,
    path: str,
    query: dict[str, Any] | None = None,
    body: Any = None,
    idempotency_key: str | None = None,
    environ: dict[str, str] | None = None,
) -> Answer:
    """Send one request to the REST API in this thread; its answer."""
    payload = b"" if body is None else json.dumps(body).encode()
    host = default_host()
    base = {
        "SERVER_NAME": host,
        "SERVER_PORT": "443",
        "HTTP_HOST": host,
        "REMOTE_ADDR": "127.0.0.1",
        "wsgi.url_scheme": "https",
        **(environ or {}),
    }
    meta = {
        **base,
        "REQUEST_METHOD": method.upper(),
        "SCRIPT_NAME": "",
        "PATH_INFO": path,
        "QUERY_STRING": _query_string(query),
        "SERVER_PROTOCOL": "HTTP/1.1",
        "HTTP_AUTHORIZATION": f"Bearer {credential}",
        "HTTP_ACCEPT": "application/json",
        "HTTP_USER_AGENT": USER_AGENT,
        "wsgi.input": io.BytesIO(payload),
        "wsgi.errors": io.StringIO(),
        "wsgi.version": (1, 0),
        "wsgi.multithread": True,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
    }
    if payload:
        meta["CONTENT_TYPE"] = "application/json"
        meta["CONTENT_LENGTH"] = str(len(payload))
    if idempotency_key is not None:
        meta["HTTP_X_SERVICE_IDEMPOTENCY_KEY"] = idempotency_key
    response = handler().get_response(WSGIRequest(meta))
    if response.streaming:
        content = b"".join(response.streaming_content)
        response.close()
    else:
        # Not response.close(): its request_finished signal would close this thread's database
        # connection mid-transaction in a caller that holds one; the caller manages connections.
        content = response.content
    headers = dict(response.items())
    kind = headers.get("Content-Type", "")
    if not content:
        data = None
    elif "json" in kind:
        data = json.loads(content)
    else:
        data = content.decode(response.charset or "utf-8", errors="replace")
    return Answer(status=response.status_code, headers=headers, data=data)
