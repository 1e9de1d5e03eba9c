"""Django's HTTP handler for ASGI: each request's synchronous work in one hop, on one of a few
long-lived threads.

Django's own ASGIHandler builds an async middleware chain. With synchronous middleware and views
(ours) it then crosses between the event loop and the request's worker thread many times a request:
into the chain, back to the loop below every synchronous-only middleware, again for each
`MiddlewareMixin.process_request`/`process_response` in async mode, for each synchronous
`process_view`, for the view and for rendering. Every crossing waits its turn on the loop, which
under load is busy with every other request's crossings.

This handler keeps Django's ASGI request and response handling (body reading, signals, streaming,
closing) and runs the synchronous request path as WSGI does, in one hop: the synchronous middleware
chain, URL resolution, `process_view`, the view and rendering. An async view still runs on the event
loop (Django's synchronous path awaits it there through `async_to_sync`).

Lanes: Django gives every request a thread of its own (a `ThreadSensitiveContext` per request),
so each request started a thread and built a new database wrapper and thread-local storage, which
then waited for the garbage collector; under load 20 requests' threads also competed for the GIL in
no particular order. Here a process has WEB_THREADS lanes (default 4), each a long-lived thread, and
a request runs all of its synchronous work (request_started's receivers, the path above, closing the
response and request_finished's) on one lane. Database connections stay per thread as Django
expects: taken from the pool and given back within the request, on the lane's thread.

A request takes a lane once its body is read and gives it back once its response is made; requests
that find every lane taken wait in one queue, in arrival order, and each takes the first lane to come
free. A slow request so holds up no request behind it while another lane is free (a queue per lane
would leave a request waiting behind a slow one while other lanes emptied).

An async view parks its lane's thread: the synchronous path waits in `async_to_sync` while the view
awaits on the event loop (the detached assistant test awaits an LLM provider for up to 45 s; its own
synchronous hops run on that waiting thread, as `async_to_sync` runs them). While a thread is parked
the process adds a lane in its place, so WEB_THREADS lanes stay free to run; once it is back, the next
lane given back retires (its thread ends when the request that used it last is done). Without the
extra lane a parked thread would be lost to the others: four detached tests of four widgets in flight
would stop a process of four lanes.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import gc
from collections import deque
from concurrent.futures import Executor, Future, ThreadPoolExecutor

from asgiref.sync import AsyncToSync, ThreadSensitiveContext, async_to_sync, iscoroutinefunction, sync_to_async
from django.conf import settings
from django.core.handlers.asgi import ASGIHandler
from django.urls import get_resolver


class _Lanes:
    """The process's lanes and the one queue of requests waiting for a lane (see the module)."""

    def __init__(self, count: int) -> None:
        self.count = count
        # taken from the end: lane 0 first. Nothing else keeps a lane: one that retires ends its thread
        # once the last request that used it lets go of it.
        self.idle = [
            ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"web-lane-{i}") for i in reversed(range(count))
        ]
        self._waiting: deque[asyncio.Future] = deque()
        self._lanes = count  # lanes in use or idle, parked ones included
        self._parked = 0  # lanes whose thread waits for an async view
        self._named = count
        self._loop: asyncio.AbstractEventLoop | None = None

    async def take(self) -> ThreadPoolExecutor:
        self._loop = asyncio.get_running_loop()
        if self.idle and not self._waiting:
            return self.idle.pop()
        turn = asyncio.get_running_loop().create_future()
        self._waiting.append(turn)
        try:
            return await turn
        except asyncio.CancelledError:
            if turn.done() and not turn.cancelled():  # given a lane just as it was cancelled
                self.give_back(turn.result())
            raise

    def give_back(self, lane: ThreadPoolExecutor) -> None:
        if self._lanes - self._parked > self.count:  # a parked thread is back: one lane too many
            self._lanes -= 1
            return  # dropped: its thread ends once the request that used it last lets go of it
        while self._waiting:
            turn = self._waiting.popleft()
            if not turn.done():
                turn.set_result(lane)
                return
        self.idle.append(lane)

    def park(self) -> None:
        """A lane's thread waits for an async view: a new lane takes its place (on the event loop)."""
        self._parked += 1
        if self._lanes - self._parked < self.count:
            self._lanes += 1
            lane = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"web-lane-{self._named}")
            self._named += 1
            self.give_back(lane)

    def unpark(self) -> None:
        self._parked -= 1

    def parked(self, view):
        """`view` (an async view) as the synchronous callable Django's synchronous path runs on a lane."""

        @functools.wraps(view)
        def run(request, *args, **kwargs):
            self._loop.call_soon_threadsafe(self.park)
            try:
                return async_to_sync(view)(request, *args, **kwargs)
            finally:
                self._loop.call_soon_threadsafe(self.unpark)

        return run


class _RequestLane(Executor):
    """The executor of one request's thread-sensitive calls: the lane it is given once its body is
    read (every synchronous call of a request comes after that). Once the response is made the lane
    is given back to the queue, but the request's later calls (streaming a response, closing it,
    request_finished's receivers) still go to that lane's thread, between the calls of the request
    that took it next, as Django expects of a request's connections."""

    lane: ThreadPoolExecutor | None = None
    held = False

    def submit(self, fn, /, *args, **kwargs) -> Future:
        if self.lane is None:
            raise RuntimeError("a request's synchronous work runs only once it has a lane")
        return self.lane.submit(fn, *args, **kwargs)


_request_lane: contextvars.ContextVar[_RequestLane] = contextvars.ContextVar("request_lane")


class OneHopASGIHandler(ASGIHandler):
    def __init__(self, lanes: int | None = None):
        super().__init__()
        self.load_middleware(is_async=False)
        self._lanes = _Lanes(lanes or settings.WEB_THREADS)

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            raise ValueError(f"Django can only handle ASGI/HTTP connections, not {scope['type']}.")
        if getattr(AsyncToSync.executors, "current", None) is not None:
            # Called from synchronous code through async_to_sync (a test sharing its transaction, a
            # command): that waiting thread runs the work, as with Django's own handler.
            async with ThreadSensitiveContext():
                await self.handle(scope, receive, send)
            return
        request_lane = _RequestLane()
        token = _request_lane.set(request_lane)
        try:
            async with ThreadSensitiveContext(executor=request_lane):
                await self.handle(scope, receive, send)
        finally:
            _request_lane.reset(token)
            self._give_back(request_lane)

    async def read_body(self, receive):
        body_file = await super().read_body(receive)
        request_lane = _request_lane.get(None)
        if request_lane is not None:
            try:
                request_lane.lane = await self._lanes.take()
            except BaseException:
                body_file.close()
                raise
            request_lane.held = True
        return body_file

    def _give_back(self, request_lane: _RequestLane) -> None:
        if request_lane.held:
            request_lane.held = False
            self._lanes.give_back(request_lane.lane)

    async def get_response_async(self, request):
        try:
            return await sync_to_async(self._respond, thread_sensitive=True)(request)
        finally:  # made (or cancelled): the next request may have the lane while this one is sent
            request_lane = _request_lane.get(None)
            if request_lane is not None:
                self._give_back(request_lane)

    def _respond(self, request):
        response = self.get_response(request)
        release_rendered(response)
        return response

    def make_view_atomic(self, view):
        view = super().make_view_atomic(view)
        request_lane = _request_lane.get(None)
        if request_lane is not None and request_lane.held and iscoroutinefunction(view):
            return self._lanes.parked(view)  # see the module: a lane takes its thread's place meanwhile
        return view


def release_rendered(response) -> None:
    """Once a DRF response is rendered, drop its data and renderer context.

    DRF keeps a request's objects in reference cycles (the response in its own renderer context, the
    view holding the response and the request, the request's parser context holding the view), so
    reference counting never frees them and every response's data (a 50-chat page is some 150 dicts
    and lists) waits for the garbage collector, by then in its oldest generation: under load its
    collections walk tens of thousands of such objects at a time, while no request progresses.
    The bytes are already in `response.content`; without the data the rest of the cycle is a few
    dozen small objects."""
    if getattr(response, "is_rendered", False) and hasattr(response, "renderer_context"):
        response.data = None
        response.renderer_context = None


def get_asgi_application() -> OneHopASGIHandler:
    """django.core.asgi.get_asgi_application with this handler."""
    import django

    django.setup(set_prefix=False)
    return OneHopASGIHandler()


def freeze_startup_objects() -> int:
    """Move what the process loaded at startup out of the garbage collector's reach (`gc.freeze`);
    returns how many objects were frozen.

    A web process holds some 400 000 long-lived objects (Django, the apps, the URL conf, DRF and the
    OpenAPI machinery). The collector's full collection walks all of them, and under load every
    request in flight waits for it: such stalls make the slowest requests' latency. Frozen objects
    are never scanned again, so a full collection
    walks only what requests created since. Called once the application is built (config/asgi.py);
    the URL conf is loaded first so that it is frozen too."""
    get_resolver().url_patterns  # noqa: B018 (imports every view module now, not on the first request)
    gc.collect()  # what startup left as garbage is freed, not frozen
    gc.freeze()
    return gc.get_freeze_count()
