"""Provider waits on the request path: at most AI_REQUEST_PROVIDER_SLOTS requests of one widget, and
AI_REQUEST_PROVIDER_PROCESS_SLOTS of one web process, wait on an AI provider at once, each under a
deadline of its own.

A web process runs requests' synchronous work on WEB_THREADS threads (config.asgi). A
request that waits on a provider (a knowledge-base search or rule write embedding its text, a signed
assistant turn, speech, a model list) holds its thread for as long as the provider takes, so a slow
provider of one widget could hold every thread of the process and stall every other widget. Here:

- `wait(widget_id, seconds=...)` takes one of the widget's slots (`ratelimit.Slots`, in the cache,
  so the cap counts across web processes) or answers 429 `provider_busy` with `Retry-After`; the slot
  is freed when the block ends, and expires by itself `SLOT_MARGIN_SECONDS` after its calls'
  deadlines should the process die meanwhile. A cache that does not answer is 503: nothing was paid for.
- inside the block `deadline(...)` is the deadline of each provider call: `now + seconds` (or the
  caller's own default when shorter), which the provider layer passes on to its calls
  (apps.ai.providers), whose timeouts it clamps. It is taken when the call starts, after the
  caller's own preparation (loading a vendor's SDK on first use).

With the slots below WEB_THREADS, one widget's slow provider leaves WEB_THREADS - slots threads of
every process to the others (settings check AI_REQUEST_PROVIDER_SLOTS < WEB_THREADS). Several widgets'
slow providers together could still take every thread, so a wait also takes one of the process's
AI_REQUEST_PROVIDER_PROCESS_SLOTS (a semaphore of this process, below WEB_THREADS): past them it is
429 `provider_busy` at once, and at least one thread of each process stays with requests that wait on
no provider (a widget's public config, a chat list). Worker-side provider calls (the AI operator,
document ingestion) never take a slot: they hold no request thread.
"""

from __future__ import annotations

import contextvars
import math
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from django.conf import settings

from .errors import ProviderBusy, ServiceUnavailable
from .ratelimit import Slots, SlotStoreUnavailable

SLOT_MARGIN_SECONDS = 30  # a slot outlives its calls' deadlines by this much (the request's own work)
CALLS_PER_WAIT = 2  # a signed assistant turn embeds its question, then asks for the answer
RETRY_AFTER_SECONDS = 1

_bound: contextvars.ContextVar[float | None] = contextvars.ContextVar("provider_wait_seconds", default=None)


class _ProcessSlots:
    """AI_REQUEST_PROVIDER_PROCESS_SLOTS of this process, taken without waiting (a semaphore sized
    when first used, again when the setting differs, as tests override it)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._count = 0
        self._semaphore = threading.BoundedSemaphore(1)

    def take(self) -> threading.BoundedSemaphore | None:
        with self._lock:
            if self._count != settings.AI_REQUEST_PROVIDER_PROCESS_SLOTS:
                self._count = settings.AI_REQUEST_PROVIDER_PROCESS_SLOTS
                self._semaphore = threading.BoundedSemaphore(self._count)
            semaphore = self._semaphore
        return semaphore if semaphore.acquire(blocking=False) else None


_process = _ProcessSlots()


def slots(seconds: float) -> Slots:
    ttl = CALLS_PER_WAIT * math.ceil(seconds) + SLOT_MARGIN_SECONDS
    return Slots("provider-wait", settings.AI_REQUEST_PROVIDER_SLOTS, ttl=ttl)


@contextmanager
def wait(widget_id: int, *, seconds: float) -> Iterator[None]:
    """One of the process's and one of the widget's provider-wait slots for the block, whose provider
    calls each wait at most `seconds`. 429 `provider_busy` when every slot of either is taken."""
    process_slot = _process.take()
    if process_slot is None:
        raise ProviderBusy(
            "This server waits on AI providers in as many requests as it may at once; retry shortly.",
            headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
        )
    try:
        held = slots(seconds)
        try:
            slot = held.acquire(widget_id)
        except SlotStoreUnavailable:
            raise ServiceUnavailable(
                "The admission store is unavailable; the provider was not called.",
                headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
            ) from None
        if slot is None:
            raise ProviderBusy(
                f"At most {held.count} requests of this widget wait on its AI provider at once.",
                headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
            )
        token = _bound.set(seconds)
        try:
            yield
        finally:
            _bound.reset(token)
            held.release(slot)
    finally:
        process_slot.release()


def deadline(default_seconds: float | None = None) -> float:
    """The time.monotonic() deadline of a provider call starting now: `default_seconds`, or the
    request path's bound when it is shorter (or when no default is given)."""
    bound = _bound.get()
    candidates = [s for s in (default_seconds, bound) if s is not None]
    if not candidates:
        raise ValueError("outside a provider wait a call names its own deadline")
    return time.monotonic() + min(candidates)


def on_request_path() -> bool:
    """True inside `wait`: the caller holds a request thread."""
    return _bound.get() is not None
