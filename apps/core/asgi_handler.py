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
response and request_finished's) on one lane, the one with the fewest requests when it arrives.
Requests of a lane are served in arrival order; a slow request delays only those queued behind it
on its lane, and new requests go to the other lanes. Database connections stay per thread as Django
expects: taken from the pool and given back within the request, on the lane's thread.
"""

from __future__ import annotations

import gc
from concurrent.futures import ThreadPoolExecutor

from asgiref.sync import AsyncToSync, ThreadSensitiveContext, sync_to_async
from django.conf import settings
from django.core.handlers.asgi import ASGIHandler
from django.urls import get_resolver


class OneHopASGIHandler(ASGIHandler):
    def __init__(self, lanes: int | None = None):
        super().__init__()
        self.load_middleware(is_async=False)
        count = lanes or settings.WEB_THREADS
        self._lanes = [ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"web-lane-{i}") for i in range(count)]
        self._in_lane = [0] * count

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            raise ValueError(f"Django can only handle ASGI/HTTP connections, not {scope['type']}.")
        if getattr(AsyncToSync.executors, "current", None) is not None:
            # Called from synchronous code through async_to_sync (a test sharing its transaction, a
            # command): that waiting thread runs the work, as with Django's own handler.
            async with ThreadSensitiveContext():
                await self.handle(scope, receive, send)
            return
        lane = min(range(len(self._lanes)), key=self._in_lane.__getitem__)
        self._in_lane[lane] += 1
        try:
            async with ThreadSensitiveContext(executor=self._lanes[lane]):
                await self.handle(scope, receive, send)
        finally:
            self._in_lane[lane] -= 1

    async def get_response_async(self, request):
        return await sync_to_async(self._respond, thread_sensitive=True)(request)

    def _respond(self, request):
        response = self.get_response(request)
        release_rendered(response)
        return response


def release_rendered(response) -> None:
    """Once a DRF response is rendered, drop its data and renderer context.

    DRF keeps a request's objects in reference cycles (the response in its own renderer context, the
    view holding the response and the request, the request's parser context holding the view), so
    reference counting never frees them and every response's data (a 50-chat page is some 150 dicts
    and lists) waits for the garbage collector, by then in its oldest generation: under load its
    collections walked 20 000 such objects at a time, 40-60 ms during which no request progressed.
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
    OpenAPI machinery). The collector's full collection walks all of them: 260 ms measured in
    process, and under load every request in flight waited for it. The load benchmark's p99 was those
    stalls: at 20 users the slowest 2 % of the chat list's requests all finished within 0.1 s of each
    other, twice a run, about 0.4 s late. Frozen objects are never scanned again, so a full collection
    walks only what requests created since. Called once the application is built (config/asgi.py);
    the URL conf is loaded first so that it is frozen too."""
    get_resolver().url_patterns  # noqa: B018 (imports every view module now, not on the first request)
    gc.collect()  # what startup left as garbage is freed, not frozen
    gc.freeze()
    return gc.get_freeze_count()
