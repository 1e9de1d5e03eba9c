"""config.asgi.application: a synchronous view runs on a thread of the WSGI adapter, an async view on
the event loop (Django's ASGI handler), websockets through Channels (tests of their own)."""

from __future__ import annotations

import asyncio
import gc
import threading

import pytest
from asgiref.testing import ApplicationCommunicator
from django.http import JsonResponse
from django.urls import path

from config.asgi import application

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


urlpatterns = [path("sync", sync_view), path("async", async_view)]


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
    import json

    settings.ROOT_URLCONF = __name__

    status, body, loop_thread = asyncio.run(_get("/sync"))
    assert status == 200
    assert json.loads(body) == {"thread": json.loads(body)["thread"], "on_loop": False}
    assert json.loads(body)["thread"] != loop_thread

    status, body, loop_thread = asyncio.run(_get("/async"))
    assert status == 200
    assert json.loads(body) == {"thread": loop_thread, "on_loop": True}


def test_an_unknown_path_is_answered_by_the_wsgi_side():
    status, body, _ = asyncio.run(_get("/no-such-page"))
    assert status == 404


def test_startup_objects_are_frozen():
    # config.asgi froze what start-up loaded (Django, the apps, the URL conf) once it was built
    assert gc.get_freeze_count() > 10_000
