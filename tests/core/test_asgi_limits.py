"""The request body gate in front of Django (apps.core.asgi_limits), driven as ASGI; tests/test_server.py
drives it through the real server."""

from __future__ import annotations

import asyncio
import json
import os

import pytest
from asgiref.sync import async_to_sync
from django.conf import settings
from django.urls import URLPattern, URLResolver, get_resolver

from apps.core.asgi_limits import RESPONSE_MEMORY_BYTES, WRITTEN, RequestBodyLimit, ResponseBuffer, declared_length


def scope(headers: list[tuple[bytes, bytes]], path: str = "/x") -> dict:
    return {"type": "http", "method": "POST", "path": path, "headers": headers, "query_string": b""}


class Echo:
    """An app that reads the whole body and records what it saw."""

    def __init__(self):
        self.scope = None
        self.body = b""
        self.calls = 0

    async def __call__(self, scope, receive, send):
        self.calls += 1
        self.scope = scope
        while True:
            message = await receive()
            self.body += message.get("body", b"")
            if not message.get("more_body"):
                break
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})


def drive(app, scope, messages):
    """Run `app` with `messages` as the client's; returns (status, headers, body, messages read)."""
    pending = list(messages)
    read = 0
    sent = []

    async def receive():
        nonlocal read
        read += 1
        return pending.pop(0) if pending else {"type": "http.disconnect"}

    async def send(message):
        sent.append(message)

    async_to_sync(app)(scope, receive, send)
    start = next((m for m in sent if m["type"] == "http.response.start"), None)
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return (start or {}).get("status"), dict((start or {}).get("headers", [])), body, read


def chunks(total: int, size: int = 65536):
    sent = 0
    while sent < total:
        n = min(size, total - sent)
        sent += n
        yield {"type": "http.request", "body": b"x" * n, "more_body": sent < total}


@pytest.mark.parametrize("value", ["12", "0", "0000000000000000000000012"])
def test_plain_ascii_digits_are_a_length(value):
    assert declared_length(value) == int(value)


@pytest.mark.parametrize("value", ["١٢", "１２", "+12", "-1", "1e3", "12 ", "", "0x10", "²"])
def test_anything_else_is_no_length(value):
    assert declared_length(value) is None


def test_a_huge_declared_length_is_past_any_limit_without_parsing_it_whole():
    assert declared_length("9" * 5000) > 10**17


@pytest.mark.parametrize("value", ["١٢".encode(), b"1e3", b"+5", b"5, 6"])
def test_a_content_length_that_is_not_ascii_digits_is_a_400_problem(value):
    # given
    app = Echo()

    # when
    status, headers, body, read = drive(
        RequestBodyLimit(app, max_bytes=100), scope([(b"content-length", value)]), [{"type": "http.request"}]
    )

    # then the app never ran, nothing was read, and the answer closes the connection
    assert (status, app.calls, read) == (400, 0, 0)
    assert headers[b"content-type"] == b"application/problem+json"
    assert headers[b"connection"] == b"close"
    assert json.loads(body)["code"] == "bad_request"


@pytest.mark.django_db
def test_the_real_application_refuses_a_unicode_digit_length():
    # given the service's ASGI application (Django alone read "١٢" as 12)
    from config.asgi import application

    # when
    status, _, body, _ = drive(
        application,
        scope([(b"content-length", "١٢".encode()), (b"host", b"testserver")], path="/healthz"),
        [{"type": "http.request", "body": b"x" * 12}],
    )

    # then
    assert status == 400
    assert json.loads(body)["instance"] == "/healthz"


def test_a_declared_length_over_the_limit_is_refused_unread():
    app = Echo()
    status, headers, body, read = drive(
        RequestBodyLimit(app, max_bytes=100), scope([(b"content-length", b"101")]), chunks(101)
    )
    assert (status, app.calls, read) == (413, 0, 0)
    assert json.loads(body)["code"] == "body_too_large"
    assert headers[b"connection"] == b"close"


def test_a_declared_length_within_the_limit_passes_through_untouched():
    app = Echo()
    headers = [(b"content-length", b"100")]
    status, _, _, _ = drive(RequestBodyLimit(app, max_bytes=100), scope(headers), chunks(100))
    assert status == 200 and len(app.body) == 100 and app.scope["headers"] == headers


def test_a_chunked_body_is_refused_as_soon_as_it_passes_the_limit():
    # given a limit of 200 000 bytes and a client streaming 10 MB in 64 KiB messages
    app = Echo()

    # when
    status, _, _, read = drive(
        RequestBodyLimit(app, max_bytes=200_000), scope([(b"transfer-encoding", b"chunked")]), chunks(10_000_000)
    )

    # then the fourth message (262 144 bytes) was the last one read
    assert (status, app.calls, read) == (413, 0, 4)


@pytest.mark.parametrize("size", [0, 1, 65536, 65537, 3_000_000])
def test_a_chunked_body_within_the_limit_reaches_the_app_whole_with_its_length(size):
    # given
    app = Echo()
    headers = [(b"transfer-encoding", b"chunked"), (b"content-type", b"application/json")]

    messages = list(chunks(size)) or [{"type": "http.request", "body": b"", "more_body": False}]

    # when
    status, _, _, _ = drive(RequestBodyLimit(app, max_bytes=3_000_000), scope(headers), messages)

    # then the app reads the same bytes, declared by a Content-Length instead of the chunked framing
    assert status == 200
    assert app.body == b"x" * size
    assert dict(app.scope["headers"]) == {b"content-type": b"application/json", b"content-length": str(size).encode()}


def test_a_request_without_a_body_is_handed_on_unchanged():
    app = Echo()
    headers = [(b"host", b"example.com")]
    status, _, _, read = drive(
        RequestBodyLimit(app, max_bytes=10), scope(headers), [{"type": "http.request", "body": b"", "more_body": False}]
    )
    assert status == 200 and app.scope["headers"] == headers and app.body == b""


def test_a_client_gone_mid_body_gets_no_answer_and_the_app_never_runs():
    app = Echo()
    messages = [{"type": "http.request", "body": b"x", "more_body": True}, {"type": "http.disconnect"}]
    status, _, _, _ = drive(RequestBodyLimit(app, max_bytes=10), scope([]), messages)
    assert status is None and app.calls == 0


def test_websocket_and_lifespan_scopes_pass_through():
    app = Echo()
    seen = []

    async def inner(scope, receive, send):
        seen.append(scope["type"])

    gate = RequestBodyLimit(inner, max_bytes=0)
    for kind in ("websocket", "lifespan"):
        async_to_sync(gate)({"type": kind, "headers": []}, None, None)
    assert seen == ["websocket", "lifespan"] and app.calls == 0


def _views(patterns):
    for entry in patterns:
        if isinstance(entry, URLResolver):
            yield from _views(entry.url_patterns)
        elif isinstance(entry, URLPattern):
            yield getattr(entry.callback, "cls", None) or getattr(entry.callback, "view_class", None)


def test_the_gate_admits_the_largest_body_any_route_accepts():
    # given every route's own limit
    limits = [getattr(view, "max_body_bytes", None) for view in _views(get_resolver().url_patterns)]
    largest = max([limit for limit in limits if limit] + [settings.API_MAX_BODY_BYTES])

    # then the gate in front of them all is exactly that large
    assert largest >= 10 * 1024 * 1024
    assert settings.REQUEST_MAX_BODY_BYTES == largest


def test_the_app_starts_only_once_the_whole_declared_body_is_read():
    # given a client sending 200 declared bytes in four messages
    seen_at_start = []
    reads = 0
    messages = list(chunks(200, size=50))

    async def receive():
        nonlocal reads
        reads += 1
        return messages.pop(0) if messages else {"type": "http.disconnect"}

    async def app(scope, receive_, send):
        seen_at_start.append(reads)  # the body is read on the event loop, before any thread is taken
        body = b""
        while True:
            message = await receive_()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": body})

    sent = []

    async def send(message):
        sent.append(message)

    # when
    async_to_sync(RequestBodyLimit(app, max_bytes=1000))(scope([(b"content-length", b"200")]), receive, send)

    # then
    assert seen_at_start and seen_at_start[0] >= 4
    assert sent[-1]["body"] == b"x" * 200


def test_the_clients_disconnect_sets_the_scopes_event_and_ends_a_streamed_response():
    import threading

    from django.http import StreamingHttpResponse

    from apps.core.asgi_limits import DISCONNECTED, StopWhenGone

    # given a gate whose client disconnects right after its (empty) body
    events: list[threading.Event] = []

    async def app(scope, receive, send):
        events.append(scope[DISCONNECTED])
        assert (await receive())["type"] == "http.request"
        assert (await receive())["type"] == "http.disconnect"

    drive(RequestBodyLimit(app, max_bytes=10), scope([]), [{"type": "http.request", "body": b""}])
    assert events[0].is_set()

    # and a WSGI application streaming pieces
    produced = []

    def pieces():
        for n in range(100):
            produced.append(n)
            yield b"piece"

    closed = []
    response = StreamingHttpResponse(pieces())
    response.close = lambda: closed.append(True)
    gone = threading.Event()
    wrapped = StopWhenGone(lambda environ, start_response: response)
    result = wrapped({"asgi.scope": {DISCONNECTED: gone}}, None)

    # when the client goes after two pieces
    sent = []
    for piece in result:
        sent.append(piece)
        if len(sent) == 2:
            gone.set()

    # then no further piece was produced and the response was closed as usual
    assert len(sent) == 2 and len(produced) == 3
    assert closed == [True]


# --- the response buffer: a view's answer is taken at once, written at the client's pace ----------------------


def test_an_answer_is_taken_at_once_from_a_client_that_reads_nothing_and_written_whole_once_it_reads():
    pieces = [os.urandom(50_000) for _ in range(4 * RESPONSE_MEMORY_BYTES // 50_000)]  # past memory, into a file
    written: list[dict] = []
    callbacks: list[int] = []

    async def main():
        reading = asyncio.Event()
        answered = asyncio.Event()

        async def client(message):  # the server's send: waits until the client reads
            await reading.wait()
            written.append(message)

        async def view(scope, receive, send):
            await send({"type": "http.response.start", "status": 200, "headers": []})
            for piece in pieces:
                await send({"type": "http.response.body", "body": piece, "more_body": True})
            await send({"type": "http.response.body", "body": b""})
            scope[WRITTEN].append(lambda: callbacks.append(len(written)))
            answered.set()

        served = asyncio.ensure_future(ResponseBuffer(view)({"type": "http"}, None, client))
        await asyncio.wait_for(answered.wait(), 5)  # the whole answer taken while the client read nothing
        assert not written and not callbacks
        reading.set()
        await asyncio.wait_for(served, 5)

    asyncio.run(main())
    assert written[0]["type"] == "http.response.start"
    assert b"".join(message["body"] for message in written[1:]) == b"".join(pieces)
    assert written[-1] == {"type": "http.response.body", "body": b"", "more_body": False}
    assert callbacks == [len(written)]  # called once the client had it all
