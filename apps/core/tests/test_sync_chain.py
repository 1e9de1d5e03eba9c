"""Under ASGI the middleware chain runs in the request's one worker thread (SyncChainMiddleware last
in MIDDLEWARE): a request crosses between the event loop and a thread a fixed few times, not once
per `process_request`/`process_response` of each Django middleware."""

from __future__ import annotations

import asyncio

import pytest
from asgiref import sync
from django.conf import settings
from django.test import AsyncClient

pytestmark = pytest.mark.django_db(transaction=True)


def test_it_is_the_last_middleware():
    assert settings.MIDDLEWARE[-1] == "apps.core.middleware.SyncChainMiddleware"


async def _hops(monkeypatch, path: str) -> tuple[int, int]:
    calls = {"to_thread": 0, "to_loop": 0}
    to_thread, to_loop = sync.SyncToAsync.__call__, sync.AsyncToSync.__call__

    async def counted_to_thread(self, *args, **kwargs):
        calls["to_thread"] += 1
        return await to_thread(self, *args, **kwargs)

    def counted_to_loop(self, *args, **kwargs):
        calls["to_loop"] += 1
        return to_loop(self, *args, **kwargs)

    monkeypatch.setattr(sync.SyncToAsync, "__call__", counted_to_thread)
    monkeypatch.setattr(sync.AsyncToSync, "__call__", counted_to_loop)
    response = await AsyncClient().get(path)
    monkeypatch.undo()
    assert response.status_code in (200, 401)
    return calls["to_thread"], calls["to_loop"]


def test_a_request_hops_between_loop_and_thread_a_fixed_few_times(monkeypatch, settings):
    # Django 5.2's own: request_started, the chain, each synchronous process_view (ours and CSRF's),
    # the view, rendering, the 4xx log line, close. Nothing per middleware.
    with_it = asyncio.run(_hops(monkeypatch, "/api/v1/chats"))
    assert with_it == (8, 1)
    settings.MIDDLEWARE = [m for m in settings.MIDDLEWARE if not m.endswith("SyncChainMiddleware")]
    without_it = asyncio.run(_hops(monkeypatch, "/api/v1/chats"))
    assert without_it[0] >= with_it[0] + 8  # session, common, auth, messages, xframe: request and response
