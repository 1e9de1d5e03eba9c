"""The request body gate in front of Django (config/asgi.py wraps the HTTP application in it).

SECURITY: Django's ASGI handler reads the whole body (spooled to a temporary file past
FILE_UPLOAD_MAX_MEMORY_SIZE) before any middleware runs, so a body refused later with 413 has
already been received in full: one unauthenticated 1 GiB POST wrote 1 GiB under /tmp. Here, before
Django, for every route:

- a declared `Content-Length` that is not ASCII digits (or several that disagree) answers 400, one
  over REQUEST_MAX_BODY_BYTES (the largest body any route accepts) answers 413 at once, unread;
- a body without a declared length (`Transfer-Encoding: chunked`, or HTTP/2 without the header) is
  read here into a spooled file and refused with 413 as soon as the bytes read pass the limit. Read
  in full, it goes on to Django with the `Content-Length` it turned out to have: Django reads a body
  only up to the declared length, so without one a chunked body reached the views empty.

Smaller per-route limits stay with apps.core.middleware.BodySizeLimitMiddleware. The refusals are
problem+json like the application's own, and close the connection (the rest of the body is never
read).
"""

from __future__ import annotations

import json
import logging
import tempfile

from django.conf import settings

from apps.core.errors import PROBLEM_CONTENT_TYPE, BadRequest, BodyTooLarge, problem_body
from apps.core.numbers import parse_int

logger = logging.getLogger("apps.request")

REPLAY_CHUNK = 64 * 1024


def declared_length(value: str) -> int | None:
    """A Content-Length value as a number (the one ASCII integer parser, apps.core.numbers); None
    unless it is ASCII digits only. A number past 10**18 reads as 10**18: past any limit, and a huge
    digit string is never converted."""
    try:
        return parse_int(value, maximum=10**18)
    except ValueError:
        if value.isascii() and value.isdigit():
            return 10**18
        return None


class RequestBodyLimit:
    """ASGI middleware for `http` scopes; other scopes pass through untouched."""

    def __init__(self, app, *, max_bytes: int | None = None):
        self.app = app
        self._max_bytes = max_bytes

    @property
    def max_bytes(self) -> int:
        return self._max_bytes if self._max_bytes is not None else settings.REQUEST_MAX_BODY_BYTES

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        limit = self.max_bytes
        lengths = {value.decode("latin-1").strip() for name, value in scope["headers"] if name == b"content-length"}
        if lengths:
            parsed = {declared_length(value) for value in lengths}
            if len(parsed) != 1 or None in parsed:
                return await self._refuse(scope, send, BadRequest("Content-Length must be one number of bytes."))
            if parsed.pop() > limit:
                return await self._refuse(scope, send, BodyTooLarge(f"The body exceeds {limit} bytes."))
            # The server frames the body by the declared length: Django reads exactly that much.
            return await self.app(scope, receive, send)
        return await self._read_unframed(scope, receive, send, limit)

    async def _read_unframed(self, scope, receive, send, limit: int):
        """A body without a declared length: read it here, within the limit, then hand it on with
        the length it had."""
        body = tempfile.SpooledTemporaryFile(max_size=settings.FILE_UPLOAD_MAX_MEMORY_SIZE, mode="w+b")
        try:
            size = 0
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    return  # the client went away mid-body: nothing to answer
                chunk = message.get("body", b"")
                size += len(chunk)
                if size > limit:
                    return await self._refuse(scope, send, BodyTooLarge(f"The body exceeds {limit} bytes."))
                body.write(chunk)
                if not message.get("more_body", False):
                    break
            if size == 0 and not any(name == b"transfer-encoding" for name, _ in scope["headers"]):
                # The common case, a request without a body: replay nothing, change nothing.
                return await self.app(scope, _replay(None, receive), send)
            headers = [(name, value) for name, value in scope["headers"] if name != b"transfer-encoding"]
            headers.append((b"content-length", str(size).encode("ascii")))
            body.seek(0)
            await self.app({**scope, "headers": headers}, _replay(body, receive), send)
        finally:
            body.close()

    @staticmethod
    async def _refuse(scope, send, err) -> None:
        content = json.dumps(problem_body(err, instance=scope.get("path", "")), ensure_ascii=False).encode()
        await send(
            {
                "type": "http.response.start",
                "status": err.status,
                "headers": [
                    (b"content-type", PROBLEM_CONTENT_TYPE.encode()),
                    (b"content-length", str(len(content)).encode()),
                    (b"connection", b"close"),  # the rest of the body is never read
                ],
            }
        )
        await send({"type": "http.response.body", "body": content})
        logger.info(
            "request refused before the application",
            extra={"method": scope.get("method"), "path": scope.get("path"), "status": err.status},
        )


def _replay(body, receive):
    """receive() that yields the body read so far (in REPLAY_CHUNK pieces; None: an empty body), then
    the client's own messages (a disconnect)."""
    replayed = False

    async def replay():
        nonlocal replayed
        if replayed:
            return await receive()
        chunk = body.read(REPLAY_CHUNK) if body is not None else b""
        more = len(chunk) == REPLAY_CHUNK
        replayed = not more
        return {"type": "http.request", "body": chunk, "more_body": more}

    return replay
