"""The request body gate in front of Django (config/asgi.py wraps the HTTP application in it).

SECURITY: a body refused with 413 by Django's own checks has already been received in full (one
unauthenticated 1 GiB POST once wrote 1 GiB under /tmp). Here, before Django, for every route:

- a declared `Content-Length` that is not ASCII digits (or several that disagree) answers 400, one
  over REQUEST_MAX_BODY_BYTES (the largest body any route accepts) answers 413 at once, unread;
- the body is read here, on the event loop, into a spooled file, and refused with 413 as soon as the
  bytes read pass the limit. So a slow client holds no request thread while it sends (the WSGI side's
  threads start on a whole body), and a body without a declared length (`Transfer-Encoding: chunked`,
  or HTTP/2 without the header) goes on with the `Content-Length` it turned out to have: Django reads
  a body only up to the declared length, so without one a chunked body reached the views empty.

Once the body is read, the gate listens for the client's disconnect and sets the scope's
DISCONNECTED event; `StopWhenGone` (a WSGI middleware) ends a streamed response there, as a WSGI
server does when its write fails, so a transcript or an export stops when its client goes.

Between the WSGI adapter and the server, `ResponseBuffer` takes a synchronous view's answer as fast
as the view produces it and writes it out at the client's pace on the event loop, so a client that
reads slowly or not at all (an unread download or export) holds no request thread.

Smaller per-route limits stay with apps.core.middleware.BodySizeLimitMiddleware. The refusals are
problem+json like the application's own, and close the connection (the rest of the body is never
read).
"""

from __future__ import annotations

import asyncio
import collections
import json
import logging
import tempfile
import threading

from django.conf import settings

from apps.core.errors import PROBLEM_CONTENT_TYPE, BadRequest, BodyTooLarge, problem_body
from apps.platform.numbers import parse_int

logger = logging.getLogger("apps.request")

REPLAY_CHUNK = 64 * 1024
# The scope key of the threading.Event set once the client has gone (a custom key: ASGI allows them;
# a2wsgi hands the scope to the WSGI side as environ["asgi.scope"]).
DISCONNECTED = "chatwidget.disconnected"
# The scope key of the list of callables ResponseBuffer calls once the client has the whole answer or
# has gone (when_written).
WRITTEN = "chatwidget.written"


def declared_length(value: str) -> int | None:
    """A Content-Length value as a number (the one ASCII integer parser, apps.platform.numbers); None
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
        return await self._read(scope, receive, send, limit, framed=bool(lengths))

    async def _read(self, scope, receive, send, limit: int, *, framed: bool):
        """Read the body here, within the limit, then hand it on (an unframed one with the length it
        had) while the client's disconnect is listened for."""
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
            headers = scope["headers"]
            if not framed and (size or any(name == b"transfer-encoding" for name, _ in headers)):
                headers = [(name, value) for name, value in headers if name != b"transfer-encoding"]
                headers.append((b"content-length", str(size).encode("ascii")))
            body.seek(0)
            gone = threading.Event()
            disconnected = asyncio.get_running_loop().create_future()
            listener = asyncio.ensure_future(_listen(receive, gone, disconnected))
            try:
                await self.app(
                    {**scope, "headers": headers, DISCONNECTED: gone},
                    _replay(body if size else None, disconnected),
                    send,
                )
            finally:
                listener.cancel()
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


async def _listen(receive, gone: threading.Event, disconnected: asyncio.Future) -> None:
    """The client's messages once its body is read: the first disconnect sets `gone`."""
    while (await receive())["type"] != "http.disconnect":
        pass
    gone.set()
    disconnected.set_result(None)


def _replay(body, disconnected: asyncio.Future):
    """receive() that yields the body read (in REPLAY_CHUNK pieces; None: an empty body), then waits
    for the client's disconnect."""
    replayed = False

    async def replay():
        nonlocal replayed
        if replayed:
            await asyncio.shield(disconnected)
            return {"type": "http.disconnect"}
        chunk = body.read(REPLAY_CHUNK) if body is not None else b""
        more = len(chunk) == REPLAY_CHUNK
        replayed = not more
        return {"type": "http.request", "body": chunk, "more_body": more}

    return replay


class StopWhenGone:
    """WSGI middleware: a response's remaining pieces are not produced once the client has gone (the
    gate's DISCONNECTED event, read from a2wsgi's environ["asgi.scope"]); the response is closed as
    usual (request_finished, connections given back)."""

    def __init__(self, app):
        self.app = app

    def __call__(self, environ, start_response):
        result = self.app(environ, start_response)
        gone = (environ.get("asgi.scope") or {}).get(DISCONNECTED)
        if gone is None or not getattr(result, "streaming", False):
            return result
        return _until(gone, result)


def _until(gone: threading.Event, result):
    try:
        for piece in result:
            if gone.is_set():
                return
            yield piece
    finally:
        result.close()


# A response waiting for its client keeps this much in memory, the rest in a temporary file.
RESPONSE_MEMORY_BYTES = 256 * 1024
SEND_CHUNK = 64 * 1024


class ResponseBuffer:
    """ASGI middleware in front of the WSGI adapter, for `http` scopes: every message of the answer is
    taken at once and written to the client by a task of its own, at the client's pace.

    The adapter's thread hands each piece of a response over and waits until it is taken; the server
    takes a piece only once the client has read enough of the last ones. Without this layer a client
    that stops reading held a request thread until it went away, and a few of them every thread of
    the process (as a buffering proxy spares a WSGI server's threads, here inside the process). The
    thread is free once the view has produced its answer; what the client has not read yet waits
    here, RESPONSE_MEMORY_BYTES in memory and the rest in a temporary file, and is dropped once the
    client has gone (the gate's DISCONNECTED event). The adapter sends `http.response.start` then
    `http.response.body` messages only."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        outbox = _Outbox(send, scope.get(DISCONNECTED))
        written: list = []
        try:
            await self.app({**scope, WRITTEN: written}, receive, outbox.put)
            await outbox.flushed()
        finally:
            outbox.close()
            for callback in written:
                try:
                    await asyncio.to_thread(callback)
                except Exception:
                    logger.exception("a callback after the answer was written failed")


def when_written(request, callback) -> None:
    """Call `callback` (in a thread, it may wait on a store) once the client has the whole answer to
    `request` or has gone; at once when no ResponseBuffer serves the request (a test's client)."""
    callbacks = (request.META.get("asgi.scope") or {}).get(WRITTEN)
    if callbacks is None:
        callback()
    else:
        callbacks.append(callback)


class _Outbox:
    """One response's messages on their way to the client: `put` never waits for the client; a writer
    task sends the start, the body in order (SEND_CHUNK pieces at most) and the end."""

    def __init__(self, send, gone: threading.Event | None):
        self._send, self._gone = send, gone
        self._start = None
        self._memory: collections.deque[bytes] = collections.deque()
        self._memory_bytes = 0
        self._file = None
        self._file_read = self._file_written = 0
        self._ended = False
        self._ready = asyncio.Event()
        self._writer: asyncio.Task | None = None

    async def put(self, message) -> None:
        if message["type"] == "http.response.start":
            self._start = message
            self._writer = asyncio.ensure_future(self._write())
        else:
            self._push(message.get("body", b""))
            self._ended = self._ended or not message.get("more_body", False)
        self._ready.set()

    async def flushed(self) -> None:
        """Once the application has returned: wait until everything it answered is written."""
        if self._writer is None:
            return  # nothing was answered: the server answers 500 itself
        self._ended = True
        self._ready.set()
        await self._writer

    def close(self) -> None:
        if self._writer is not None and not self._writer.done():
            self._writer.cancel()  # the application failed mid-answer: the server closes the connection
        if self._file is not None:
            self._file.close()
            self._file = None

    async def _write(self) -> None:
        await self._send(self._start)
        while True:
            chunk = self._pop()
            if chunk:
                if self._gone is None or not self._gone.is_set():
                    await self._send({"type": "http.response.body", "body": chunk, "more_body": True})
            elif self._ended:
                await self._send({"type": "http.response.body", "body": b"", "more_body": False})
                return
            else:
                self._ready.clear()
                await self._ready.wait()

    def _push(self, chunk: bytes) -> None:
        if not chunk:
            return
        if self._file is None and self._memory_bytes + len(chunk) <= RESPONSE_MEMORY_BYTES:
            self._memory.append(chunk)
            self._memory_bytes += len(chunk)
            return
        if self._file is None:
            self._file = tempfile.TemporaryFile()
        self._file.seek(self._file_written)
        self._file.write(chunk)
        self._file_written += len(chunk)

    def _pop(self) -> bytes:
        """The next piece to write (b"": nothing waiting): memory first, which holds what came before
        the file was started, then the file; a drained file is closed."""
        if self._memory:
            pieces = []
            size = 0
            while self._memory and size + len(self._memory[0]) <= SEND_CHUNK:
                pieces.append(self._memory.popleft())
                size += len(pieces[-1])
            if not pieces:  # one piece larger than SEND_CHUNK
                pieces.append(self._memory.popleft())
                size = len(pieces[0])
            self._memory_bytes -= size
            return b"".join(pieces)
        if self._file is not None:
            if self._file_read < self._file_written:
                self._file.seek(self._file_read)
                chunk = self._file.read(min(SEND_CHUNK, self._file_written - self._file_read))
                self._file_read += len(chunk)
                return chunk
            self._file.close()
            self._file = None
            self._file_read = self._file_written = 0
        return b""
