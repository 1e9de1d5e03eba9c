"""The detached test's synchronous hops: a gate per process and the connections they reuse.

An async view runs its synchronous parts (`sync_to_async`) in the request's own thread and context,
so Django gives every request a database connection of its own, opened for the request and closed
at its end (CONN_MAX_AGE 0 under ASGI: a persistent connection per request context would pile up).
For the detached test that meant one connection held per test for the whole provider call (100
tests in flight exhausted PostgreSQL's max_connections: 500 "too many clients") and, once closed
after each hop, two connection set-ups per test (10 to 20 ms each on a loaded machine).

Here:
- `hop(func, ...)` runs `func` in the request's thread once one of the process's AI_TEST_DB_HOPS
  (default 4) gate places is free; waiting longer than AI_TEST_DB_WAIT_SECONDS (default 10) raises
  `errors.TestUnavailable` (503, Retry-After).
- On PostgreSQL the hop borrows an open connection from the process's idle set (at most as many as
  the gate has places, so the route never holds more connections than that per process) and puts it
  back when the hop ends; a connection left in a transaction, in a failed state or idle for longer
  than MAX_IDLE_SECONDS is closed instead. With CONN_HEALTH_CHECKS, the hop's first query checks
  a borrowed connection idle for FRESH_SECONDS or more and reconnects a dead one.
- Where the request's thread already has a connection of its own (a test's transaction), the hop
  uses it and leaves it open; otherwise a connection opened during the hop is closed before it
  returns. Either way no connection is held while the provider is awaited.
"""

from __future__ import annotations

import asyncio
import functools
import threading
import time
import weakref

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections

from .. import errors

DEFAULT_HOPS = 4
DEFAULT_WAIT_SECONDS = 10.0
MAX_IDLE_SECONDS = 60.0
FRESH_SECONDS = 1.0

_gates: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = weakref.WeakKeyDictionary()
_idle: list[tuple[float, object]] = []  # (put back at, DatabaseWrapper), newest last
_lock = threading.Lock()


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


def _borrow():
    now = time.monotonic()
    with _lock:
        while _idle:
            put_back_at, wrapper = _idle.pop()
            if now - put_back_at <= MAX_IDLE_SECONDS:
                # With CONN_HEALTH_CHECKS the hop's first query checks a connection idle for a while
                # (a round trip); one given back just now is used as is (if the server dropped it
                # meanwhile the hop fails with 503 and the connection is discarded).
                wrapper.health_check_done = now - put_back_at < FRESH_SECONDS
                return wrapper
            wrapper.close()
    wrapper = connections.create_connection(DEFAULT_DB_ALIAS)
    wrapper.inc_thread_sharing()  # one hop at a time uses it, from whichever request's thread
    return wrapper


def _reusable(wrapper) -> bool:
    return (
        wrapper.connection is not None
        and not wrapper.in_atomic_block
        and not wrapper.needs_rollback
        and not wrapper.errors_occurred
        and wrapper.autocommit
        and not wrapper.run_on_commit
    )


def _give_back(wrapper) -> None:
    if _reusable(wrapper):
        with _lock:
            if len(_idle) < places():
                _idle.append((time.monotonic(), wrapper))
                return
    wrapper.close()


def close_idle() -> None:
    """Close the idle connections (tests, before their database is dropped)."""
    with _lock:
        idle = [wrapper for _at, wrapper in _idle]
        _idle.clear()
    for wrapper in idle:
        wrapper.close()


def _in_request_thread(func):
    @functools.wraps(func)
    def run(*args, **kwargs):
        own = connections[DEFAULT_DB_ALIAS]
        if own.connection is not None or own.in_atomic_block or own.vendor != "postgresql":
            try:
                return func(*args, **kwargs)
            finally:
                for connection in connections.all(initialized_only=True):
                    if not connection.in_atomic_block:
                        connection.close()
        wrapper = _borrow()
        connections[DEFAULT_DB_ALIAS] = wrapper
        try:
            return func(*args, **kwargs)
        finally:
            connections[DEFAULT_DB_ALIAS] = own
            _give_back(wrapper)

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
