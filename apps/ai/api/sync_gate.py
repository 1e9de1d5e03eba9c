"""The detached test's synchronous hops: a gate per process, and no connection held across the provider.

An async view runs its synchronous parts (`sync_to_async`) in the request's own thread and context,
so Django gives every request a database connection of its own, opened for the request and closed
at its end. For the detached test that meant one connection held per test for the whole provider call
(100 tests in flight exhausted PostgreSQL's max_connections: 500 "too many clients").

Here:
- `hop(func, ...)` runs `func` in the request's thread once one of the process's AI_TEST_DB_HOPS
  (default 4) gate places is free; waiting longer than AI_TEST_DB_WAIT_SECONDS (default 10) raises
  `errors.TestUnavailable` (503, Retry-After).
- A connection the hop opened is closed when the hop ends, so none is held while the provider is
  awaited and the route never holds more connections than the gate has places per process. With
  the process's connection pool (settings DB_POOL_MAX_SIZE, which the web process sets) closing
  gives the connection back to the pool and the next hop takes an open one: no connection set-up
  per hop. Where the request's thread is inside a transaction (a test's), the hop uses it as is.
"""

from __future__ import annotations

import asyncio
import functools
import weakref

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import connections

from .. import errors

DEFAULT_HOPS = 4
DEFAULT_WAIT_SECONDS = 10.0

_gates: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = weakref.WeakKeyDictionary()


def places() -> int:
    return max(1, int(getattr(settings, "AI_TEST_DB_HOPS", DEFAULT_HOPS)))


def database_unavailable() -> errors.TestUnavailable:
    return errors.TestUnavailable(
        "The database is busy or unavailable; nothing was started. Retry later.", headers={"Retry-After": "1"}
    )


def gate() -> asyncio.Semaphore:
    """The process's gate (one per event loop: a semaphore belongs to one)."""
    loop = asyncio.get_running_loop()
    found = _gates.get(loop)
    if found is None:
        found = _gates[loop] = asyncio.Semaphore(places())
    return found


def _in_request_thread(func):
    @functools.wraps(func)
    def run(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        finally:
            for connection in connections.all(initialized_only=True):
                if not connection.in_atomic_block:
                    connection.close()

    return run


async def hop(func, *args, **kwargs):
    """`func(*args, **kwargs)` in the request's thread through the gate (see the module docstring)."""
    shared = gate()
    wait = float(getattr(settings, "AI_TEST_DB_WAIT_SECONDS", DEFAULT_WAIT_SECONDS))
    try:
        await asyncio.wait_for(shared.acquire(), timeout=wait)
    except TimeoutError:
        raise database_unavailable() from None
    try:
        return await sync_to_async(_in_request_thread(func))(*args, **kwargs)
    finally:
        shared.release()
