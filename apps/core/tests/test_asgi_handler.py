"""The ASGI application runs each request's synchronous path (middleware, view, rendering) in one
hop to its worker thread (apps.core.asgi_handler), and async views still run on the event loop."""

from __future__ import annotations

import asyncio
import threading

import pytest
from asgiref import sync
from asgiref.testing import ApplicationCommunicator
from django.http import JsonResponse
from django.urls import path

from config.asgi import application

pytestmark = pytest.mark.django_db(transaction=True)


def _scope(url: str) -> dict:
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": url,
        "raw_path": url.encode(),
        "query_string": b"",
        "headers": [(b"host", b"localhost")],
        "client": ("127.0.0.1", 4000),
        "server": ("127.0.0.1", 80),
    }


async def _get(url: str) -> tuple[int, bytes]:
    communicator = ApplicationCommunicator(application, _scope(url))
    await communicator.send_input({"type": "http.request", "body": b""})
    start = await communicator.receive_output(10)
    body = b""
    while True:
        message = await communicator.receive_output(10)
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    await communicator.wait(10)
    return start["status"], body


def _hops(monkeypatch, url: str) -> tuple[int, list[str]]:
    names: list[str] = []
    to_thread = sync.SyncToAsync.__call__

    async def counted(self, *args, **kwargs):
        names.append(getattr(self.func, "__qualname__", repr(self.func)))
        return await to_thread(self, *args, **kwargs)

    monkeypatch.setattr(sync.SyncToAsync, "__call__", counted)
    status, _ = asyncio.run(_get(url))
    monkeypatch.undo()
    return status, names


def test_the_synchronous_path_is_one_hop(monkeypatch):
    status, hops = _hops(monkeypatch, "/api/v1/chats")
    assert status == 401
    # request_started's receivers, then middleware + view + rendering + the 4xx log line at once,
    # then closing the response
    assert hops[:2] == ["Signal.asend.<locals>.sync_send", "OneHopASGIHandler._respond"]
    assert len(hops) <= 3


def test_django_s_own_handler_would_hop_for_every_middleware(monkeypatch):
    from django.core.handlers.asgi import ASGIHandler

    names: list[str] = []
    to_thread = sync.SyncToAsync.__call__

    async def counted(self, *args, **kwargs):
        names.append(getattr(self.func, "__qualname__", repr(self.func)))
        return await to_thread(self, *args, **kwargs)

    async def run():
        communicator = ApplicationCommunicator(ASGIHandler(), _scope("/api/v1/chats"))
        await communicator.send_input({"type": "http.request", "body": b""})
        return (await communicator.receive_output(10))["status"]

    monkeypatch.setattr(sync.SyncToAsync, "__call__", counted)
    assert asyncio.run(run()) == 401
    monkeypatch.undo()
    assert len(names) >= 5  # a hop around each async-capable stretch of the middleware chain


async def _async_view(request):
    await asyncio.sleep(0)
    return JsonResponse({"thread": threading.current_thread().name})


urlpatterns = [path("async-view", _async_view)]


def test_an_async_view_runs_on_the_event_loop(settings):
    settings.ROOT_URLCONF = __name__
    loop_thread = threading.current_thread().name  # asyncio.run runs the loop in this thread
    status, body = asyncio.run(_get("/async-view"))
    assert status == 200
    assert body == f'{{"thread": "{loop_thread}"}}'.encode()


def _thread_view(request):
    from django.db import connection

    connection.ensure_connection()
    return JsonResponse({"thread": threading.current_thread().name, "wrapper": id(connection)})


urlpatterns.append(path("thread-view", _thread_view))


def test_requests_run_on_long_lived_lanes(settings):
    """Every request's synchronous work runs on one of the process's lanes; the lanes outlive the
    requests (one database wrapper per lane, not one per request)."""
    import json

    from django.core.signals import request_finished, request_started

    settings.ROOT_URLCONF = __name__
    seen: dict[str, set] = {"started": set(), "finished": set()}

    def started(**kwargs):
        seen["started"].add(threading.current_thread().name)

    def finished(**kwargs):
        seen["finished"].add(threading.current_thread().name)

    request_started.connect(started)
    request_finished.connect(finished)
    try:

        async def sequential():
            return [await _get("/thread-view") for _ in range(12)]

        answers = asyncio.run(sequential())
    finally:
        request_started.disconnect(started)
        request_finished.disconnect(finished)
    views = [json.loads(body) for status, body in answers if status == 200]
    assert len(views) == 12
    threads = {v["thread"] for v in views}
    # one request at a time: always the same lane (the first idle one); its wrapper is reused
    assert len(threads) == 1 and next(iter(threads)).startswith("web-lane-")
    assert len({v["wrapper"] for v in views}) == 1
    # the signals' receivers ran on the same lane as the view (connections are handled per thread)
    assert seen["started"] == seen["finished"] == threads


async def _thread_of(handler, url: str) -> tuple[int, str]:
    """One request to `handler` whose view answers {"thread": ...}: its status and that thread."""
    import json

    communicator = ApplicationCommunicator(handler, _scope(url))
    await communicator.send_input({"type": "http.request", "body": b""})
    start = await communicator.receive_output(10)
    body = await communicator.receive_output(10)
    await communicator.wait(10)
    return start["status"], json.loads(body["body"])["thread"]


def test_concurrent_requests_spread_over_the_lanes(settings):

    from apps.core.asgi_handler import OneHopASGIHandler

    settings.ROOT_URLCONF = __name__
    handler = OneHopASGIHandler(lanes=3)
    gate = threading.Barrier(3, timeout=10)

    def waiting_view(request):
        gate.wait()  # all three are in their views at once: three different threads
        return JsonResponse({"thread": threading.current_thread().name})

    urlpatterns.append(path("waiting-view", waiting_view))

    async def together():
        return await asyncio.gather(*(_thread_of(handler, "/waiting-view") for _ in range(3)))

    try:
        answers = asyncio.run(together())
    finally:
        urlpatterns.pop()
    assert [status for status, _ in answers] == [200, 200, 200]
    assert len({thread for _, thread in answers}) == 3
    assert len(handler._lanes.idle) == 3  # every lane given back


def test_waiting_requests_take_the_first_free_lane(settings):
    """One queue for all lanes: while one request is slow, the requests arriving after it are served
    by the other lane in turn, none queued behind the slow one."""

    from apps.core.asgi_handler import OneHopASGIHandler

    settings.ROOT_URLCONF = __name__
    handler = OneHopASGIHandler(lanes=2)
    entered, release = threading.Event(), threading.Event()

    def slow_view(request):
        entered.set()
        release.wait(10)
        return JsonResponse({"thread": threading.current_thread().name})

    urlpatterns.append(path("slow-view", slow_view))

    async def scenario():
        slow = asyncio.create_task(_thread_of(handler, "/slow-view"))
        while not entered.is_set():
            await asyncio.sleep(0.005)
        # three requests at once while the slow one holds its lane: all served by the other lane
        fast = await asyncio.wait_for(asyncio.gather(*(_thread_of(handler, "/thread-view") for _ in range(3))), 10)
        release.set()
        return await slow, fast

    try:
        (slow_status, slow_thread), fast = asyncio.run(scenario())
    finally:
        release.set()
        urlpatterns.pop()
    assert slow_status == 200 and [status for status, _ in fast] == [200, 200, 200]
    assert {thread for _, thread in fast} != {slow_thread} and slow_thread not in {t for _, t in fast}
    assert len(handler._lanes.idle) == 2


def test_a_response_being_sent_holds_no_lane(settings):
    """The lane is given back once the response is made: with one lane, a second request is served
    while the first one's streamed body is still being sent."""
    from django.http import StreamingHttpResponse

    from apps.core.asgi_handler import OneHopASGIHandler

    settings.ROOT_URLCONF = __name__
    handler = OneHopASGIHandler(lanes=1)
    gate: dict[str, asyncio.Event] = {}

    async def pieces():
        yield b"first "
        await gate["open"].wait()
        yield b"last"

    def streaming_view(request):
        return StreamingHttpResponse(pieces())

    urlpatterns.append(path("streaming-view", streaming_view))

    async def scenario():
        gate["open"] = asyncio.Event()
        streaming = ApplicationCommunicator(handler, _scope("/streaming-view"))
        await streaming.send_input({"type": "http.request", "body": b""})
        assert (await streaming.receive_output(10))["status"] == 200
        assert (await streaming.receive_output(10))["body"] == b"first "
        other = ApplicationCommunicator(handler, _scope("/thread-view"))
        await other.send_input({"type": "http.request", "body": b""})
        other_status = (await other.receive_output(10))["status"]
        await other.receive_output(10)
        await other.wait(10)
        gate["open"].set()
        rest = b""
        while True:
            message = await streaming.receive_output(10)
            rest += message.get("body", b"")
            if not message.get("more_body"):
                break
        await streaming.wait(10)
        return other_status, rest

    try:
        other_status, rest = asyncio.run(scenario())
    finally:
        urlpatterns.pop()
    assert other_status == 200
    assert rest == b"last"
    assert len(handler._lanes.idle) == 1


def test_an_async_view_holds_no_lane_while_it_awaits(settings):
    """The detached assistant test awaits its provider in an async view. With one lane, another
    request is served meanwhile by a lane added in the place of the parked one; the async view's
    synchronous hop ran on its own lane's thread; afterwards the process is back to one lane, and the
    retired lane's thread has ended."""
    import gc

    from apps.core.asgi_handler import OneHopASGIHandler

    settings.ROOT_URLCONF = __name__
    handler = OneHopASGIHandler(lanes=1)
    gate: dict[str, asyncio.Event] = {}
    parked: list[threading.Thread] = []

    async def awaiting_view(request):
        parked.append(await sync.sync_to_async(threading.current_thread)())
        gate["entered"].set()
        await gate["open"].wait()
        return JsonResponse({"thread": parked[0].name})

    urlpatterns.append(path("awaiting-view", awaiting_view))

    async def scenario():
        gate["entered"], gate["open"] = asyncio.Event(), asyncio.Event()
        waiting = asyncio.create_task(_thread_of(handler, "/awaiting-view"))
        await asyncio.wait_for(gate["entered"].wait(), 10)
        other = await asyncio.wait_for(_thread_of(handler, "/thread-view"), 10)  # blocked before: timed out
        gate["open"].set()
        return await waiting, other

    try:
        waiting, other = asyncio.run(scenario())
    finally:
        urlpatterns.pop()
    assert waiting == (200, "web-lane-0_0")
    assert other == (200, "web-lane-1_0")
    lanes = handler._lanes
    assert (lanes._lanes, lanes._parked, len(lanes.idle)) == (1, 0, 1)

    async def again():  # the lane left is the added one; the parked lane retired
        return await _thread_of(handler, "/thread-view")

    assert asyncio.run(again()) == (200, "web-lane-1_0")
    gc.collect()
    parked[0].join(10)
    assert not parked[0].is_alive()


def test_a_request_cancelled_while_waiting_for_a_lane_gives_no_lane_away():
    from apps.core.asgi_handler import _Lanes

    async def scenario():
        lanes = _Lanes(1)
        held = await lanes.take()
        waiting = asyncio.create_task(lanes.take())
        await asyncio.sleep(0)
        waiting.cancel()  # cancelled while it waits
        await asyncio.gather(waiting, return_exceptions=True)
        lanes.give_back(held)
        assert lanes.idle == [held]

        held = await lanes.take()
        waiting = asyncio.create_task(lanes.take())
        await asyncio.sleep(0)
        lanes.give_back(held)  # handed to the waiting request...
        waiting.cancel()  # ...which is cancelled before it runs again: the lane comes back
        await asyncio.gather(waiting, return_exceptions=True)
        assert waiting.cancelled()
        assert lanes.idle == [held]
        for lane in lanes.idle:
            lane.shutdown()

    asyncio.run(scenario())


def test_a_rendered_response_lets_go_of_its_data():
    """DRF keeps the response, the view and the request in reference cycles: once the bytes are
    rendered the data and renderer context are dropped, so they are freed without the collector."""
    from rest_framework.renderers import JSONRenderer
    from rest_framework.response import Response

    from apps.core.asgi_handler import release_rendered

    response = Response({"data": [{"id": 1}]})
    response.accepted_renderer, response.accepted_media_type = JSONRenderer(), "application/json"
    response.renderer_context = {}
    release_rendered(response)  # not rendered yet: kept
    assert response.data is not None
    response.render()
    release_rendered(response)
    assert response.data is None and response.renderer_context is None
    assert response.content == b'{"data":[{"id":1}]}'


def test_startup_objects_are_frozen():
    import gc

    from apps.core.asgi_handler import freeze_startup_objects

    try:
        assert freeze_startup_objects() > 10_000  # Django, the apps and the URL conf
        assert gc.get_freeze_count() > 10_000
    finally:
        gc.unfreeze()


def test_called_through_async_to_sync_the_waiting_thread_runs_the_request(settings):
    """A synchronous caller (a test holding its transaction) gets its own thread back, as with
    Django's handler, instead of a lane."""
    import json

    from asgiref.sync import async_to_sync

    settings.ROOT_URLCONF = __name__
    sent: list[dict] = []
    requested = False

    async def receive():
        nonlocal requested
        if not requested:
            requested = True
            return {"type": "http.request", "body": b""}
        await asyncio.Event().wait()  # no disconnect; Django cancels this listener when done

    async def send(message):
        sent.append(message)

    async_to_sync(application)(_scope("/thread-view"), receive, send)
    assert sent[0]["status"] == 200
    assert json.loads(sent[1]["body"])["thread"] == threading.current_thread().name
