"""config.asgi.application: a synchronous view runs on a thread of the WSGI adapter, an async view on
the event loop (Django's ASGI handler), websockets through Channels (tests of their own)."""

from __future__ import annotations

import asyncio
import gc
import json
import threading

import pytest
from asgiref.testing import ApplicationCommunicator
from django.http import JsonResponse
from django.urls import path

from config.asgi import SERVER_GC_THRESHOLDS, application

pytestmark = pytest.mark.django_db(transaction=True)


def _where() -> dict:
    try:
        asyncio.get_running_loop()
        on_loop = True
    except RuntimeError:
        on_loop = False
    return {"thread": threading.get_ident(), "on_loop": on_loop}


def sync_view(request):
    return JsonResponse(_where())


async def async_view(request):
    return JsonResponse(_where())


def push_view(request):
    from apps.platform import realtime

    realtime.group_send(["widget.1"], {"type": "push", "frame": {}})
    return JsonResponse(_where())


urlpatterns = [path("sync", sync_view), path("async", async_view), path("push", push_view)]


async def _get(url: str) -> tuple[int, bytes, int]:
    caller = threading.get_ident()
    scope = {
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
    communicator = ApplicationCommunicator(application, scope)
    await communicator.send_input({"type": "http.request", "body": b""})
    start = await communicator.receive_output(10)
    body = b""
    while True:
        message = await communicator.receive_output(10)
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    await communicator.send_input({"type": "http.disconnect"})
    await communicator.wait(10)
    return start["status"], body, caller


def test_a_sync_view_runs_on_a_thread_and_an_async_view_on_the_event_loop(settings):
    settings.ROOT_URLCONF = __name__

    status, body, loop_thread = asyncio.run(_get("/sync"))
    assert status == 200
    assert json.loads(body) == {"thread": json.loads(body)["thread"], "on_loop": False}
    assert json.loads(body)["thread"] != loop_thread

    status, body, loop_thread = asyncio.run(_get("/async"))
    assert status == 200
    assert json.loads(body) == {"thread": loop_thread, "on_loop": True}


class _Layer:
    def __init__(self):
        self.sent_on: list[int] = []

    async def group_send(self, group, message):
        self.sent_on.append(threading.get_ident())


def test_a_push_from_a_sync_view_is_sent_on_the_servers_event_loop(settings, monkeypatch):
    # given a layer that notes the thread each send runs on
    from apps.platform import realtime

    settings.ROOT_URLCONF = __name__
    layer = _Layer()
    monkeypatch.setattr(realtime, "get_channel_layer", lambda: layer)
    # when a synchronous view (on the adapter's thread) pushes
    status, body, loop_thread = asyncio.run(_get("/push"))
    # then the send ran on the server's loop (its layer connections), not a loop of the view's own
    assert status == 200
    assert json.loads(body)["thread"] != loop_thread
    assert layer.sent_on == [loop_thread]


def test_an_unknown_path_is_answered_by_the_wsgi_side():
    status, body, _ = asyncio.run(_get("/no-such-page"))
    assert status == 404


def test_startup_objects_are_frozen():
    # config.asgi froze what start-up loaded (Django, the apps, the URL conf) once it was built
    assert gc.get_freeze_count() > 10_000


def test_the_serving_process_collects_garbage_less_often_and_an_importer_keeps_the_defaults():
    # given the application imported (as this test process imports it): the interpreter's thresholds
    before = gc.get_threshold()
    assert before == (700, 10, 10)
    messages = [{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}]
    sent = []

    async def receive():
        return messages.pop(0)

    async def send(message):
        sent.append(message["type"])

    # when a server runs the lifespan protocol, as uvicorn does at its start (scripts/web.sh)
    try:
        asyncio.run(application({"type": "lifespan", "asgi": {"version": "3.0"}}, receive, send))
        during = gc.get_threshold()
    finally:
        gc.set_threshold(*before)

    # then the serving process spaced its collections out, and the protocol completed both phases
    assert during == SERVER_GC_THRESHOLDS == (10_000, 5, 100)
    assert sent == ["lifespan.startup.complete", "lifespan.shutdown.complete"]
