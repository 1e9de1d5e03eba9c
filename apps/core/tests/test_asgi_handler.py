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
    assert hops[:2] == ["Signal.asend.<locals>.sync_send", "BaseHandler.get_response"]
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
    assert len(names) >= 12


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
