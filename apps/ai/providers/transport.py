"""Every SDK's HTTP goes through a guarded outbound transport (apps.platform.outbound), with a whole-call
budget on top: the deadline, the number of provider HTTP operations and the response body cap.

- The OpenAI and Anthropic SDKs are built on `httpx2`: they get clients on
  `GuardedHTTPX2Transport` / `GuardedAsyncHTTPX2Transport`. The GigaChat SDK is built on `httpx`: it
  gets clients on `GuardedHTTPXTransport` / `GuardedAsyncHTTPXTransport`. Either way: the address
  policy, pinning, TLS rules, no redirects, no proxies or environment. These transports, and no
  other caller's, carry the AI_PRIVATE_HOSTS exception: the owner's own model servers on a private
  network, `http://` there only (`apps.platform.outbound.policy.PrivateHosts`).
- `_Limited*` wrap those transports. Before each request they take one operation from the current
  `Budget` and clamp the request's timeouts to the time left (and to the per-operation cap); they
  cap the response body (declared and streamed) and stop a body still trickling at the deadline,
  then hand the whole body to `answers.clean_body` (decompression counted in decoded bytes, the
  declared charset, JSON that parses): an SDK never sees a body that did not pass it.
- The budget travels in a context variable: a pooled transport is shared by every call of a process
  (keep-alive), while each call's limits stay its own (threads and asyncio tasks each see theirs).
"""

from __future__ import annotations

import asyncio
import contextvars
import os
import threading
import time
import weakref
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import httpx2

from apps.platform.outbound import DEFAULT_MAX_BYTES, GuardedAsyncHTTPXTransport, GuardedHTTPXTransport
from apps.platform.outbound.httpx2_transport import GuardedAsyncHTTPX2Transport, GuardedHTTPX2Transport

from . import answers

# An LLM may think for a while before its first byte: reads wait up to 60 s, always bounded by the
# call's deadline and the per-operation cap.
PROVIDER_TIMEOUT = httpx.Timeout(60.0, connect=5.0)
PROVIDER_TIMEOUT2 = httpx2.Timeout(60.0, connect=5.0)
MAX_RESPONSE_BYTES = DEFAULT_MAX_BYTES  # 10 MiB: a synthesized speech answer fits
# One process's pool serves every provider call: many calls in flight under ASGI keep their
# connections (a small keep-alive pool would re-handshake TLS for every call past it). The OpenAI
# SDK's own defaults.
POOL_LIMITS = httpx.Limits(max_connections=1000, max_keepalive_connections=100, keepalive_expiry=30)
POOL_LIMITS2 = httpx2.Limits(max_connections=1000, max_keepalive_connections=100, keepalive_expiry=30)


class DeadlineExceeded(httpx.ReadTimeout):
    """The call's deadline passed (before sending, or while a body was still arriving)."""


class DeadlineExceeded2(httpx2.ReadTimeout):
    """DeadlineExceeded, for httpx2 clients."""


class BodyTooLarge(httpx.RemoteProtocolError):
    """The response body is over MAX_RESPONSE_BYTES."""


class BodyTooLarge2(httpx2.RemoteProtocolError):
    """BodyTooLarge, for httpx2 clients."""


class OperationsExhausted(Exception):
    """The call's budget of provider HTTP operations is spent: nothing was sent."""


@dataclass
class Budget:
    """One call's limits: an absolute time.monotonic() deadline and a count of HTTP operations."""

    deadline: float
    max_operations: int
    attempt_timeout: float | None = None  # longest wait for one read / connect / write of one operation
    operations: int = 0

    def remaining(self) -> float:
        return self.deadline - time.monotonic()

    def take_operation(self) -> None:
        if self.operations >= self.max_operations:
            raise OperationsExhausted
        self.operations += 1


current_budget: contextvars.ContextVar[Budget | None] = contextvars.ContextVar("ai_provider_budget", default=None)


def _admit(request: Any, late: type[Exception]) -> Budget | None:
    budget = current_budget.get()
    if budget is None:
        return None
    remaining = budget.remaining()
    if remaining <= 0:
        raise late("deadline passed", request=request)
    budget.take_operation()
    cap = remaining if budget.attempt_timeout is None else min(remaining, budget.attempt_timeout)
    timeouts = dict(request.extensions.get("timeout") or {})
    for name in ("connect", "read", "write", "pool"):
        value = timeouts.get(name)
        timeouts[name] = cap if value is None else min(value, cap)
    request.extensions = {**request.extensions, "timeout": timeouts}
    return budget


def _declared_too_large(response: Any) -> bool:
    declared = response.headers.get("content-length", "")
    return declared.isascii() and declared.isdigit() and int(declared) > MAX_RESPONSE_BYTES


# --- response streams: the body cap and the deadline ----------------------------------------------


class _StreamLimit:
    _too_large: type[Exception]
    _late: type[Exception]

    def __init__(self, inner: Any, deadline: float | None) -> None:
        self._inner = inner
        self._deadline = deadline
        self._received = 0

    def _check(self, chunk: bytes) -> None:
        self._received += len(chunk)
        if self._received > MAX_RESPONSE_BYTES:
            raise self._too_large("response body over the cap")
        if self._deadline is not None and time.monotonic() > self._deadline:
            raise self._late("deadline passed while reading")


class _SyncStreamLimit(_StreamLimit):
    def __iter__(self) -> Iterator[bytes]:
        for chunk in self._inner:
            self._check(chunk)
            yield chunk

    def close(self) -> None:
        self._inner.close()


class _AsyncStreamLimit(_StreamLimit):
    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._inner:
            self._check(chunk)
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


class _LimitedStream(_SyncStreamLimit, httpx.SyncByteStream):
    _too_large, _late = BodyTooLarge, DeadlineExceeded


class _AsyncLimitedStream(_AsyncStreamLimit, httpx.AsyncByteStream):
    _too_large, _late = BodyTooLarge, DeadlineExceeded


class _LimitedStream2(_SyncStreamLimit, httpx2.SyncByteStream):
    _too_large, _late = BodyTooLarge2, DeadlineExceeded2


class _AsyncLimitedStream2(_AsyncStreamLimit, httpx2.AsyncByteStream):
    _too_large, _late = BodyTooLarge2, DeadlineExceeded2


# --- transports --------------------------------------------------------------------------------------


def _cleaned(response_class: type, request: Any, response: Any, raw: bytes) -> Any:
    """The response with its body as `answers.clean_body` leaves it (read whole: every provider
    answer is a JSON document or a short audio file, never a stream)."""
    body, changes = answers.clean_body(response.status_code, response.headers, raw, MAX_RESPONSE_BYTES)
    headers = [(name, value) for name, value in response.headers.multi_items() if name.lower() not in changes]
    headers += [(name, value) for name, value in changes.items() if value]
    return response_class(
        response.status_code, headers=headers, content=body, extensions=response.extensions, request=request
    )


class _SyncLimit:
    _stream: type
    _response: type
    _too_large: type[Exception]
    _late: type[Exception]

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def handle_request(self, request: Any) -> Any:
        budget = _admit(request, self._late)
        request.headers["Accept-Encoding"] = answers.ACCEPT_ENCODING
        response = self._inner.handle_request(request)
        if _declared_too_large(response):
            response.close()
            raise self._too_large("response body over the cap")
        stream = self._stream(response.stream, budget.deadline if budget else None)
        try:
            raw = b"".join(stream)
        finally:
            stream.close()
        return _cleaned(self._response, request, response, raw)

    def close(self) -> None:
        self._inner.close()


class _AsyncLimit:
    _stream: type
    _response: type
    _too_large: type[Exception]
    _late: type[Exception]

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    async def handle_async_request(self, request: Any) -> Any:
        budget = _admit(request, self._late)
        request.headers["Accept-Encoding"] = answers.ACCEPT_ENCODING
        response = await self._inner.handle_async_request(request)
        if _declared_too_large(response):
            await response.aclose()
            raise self._too_large("response body over the cap")
        stream = self._stream(response.stream, budget.deadline if budget else None)
        try:
            raw = b"".join([chunk async for chunk in stream])
        finally:
            await stream.aclose()
        return _cleaned(self._response, request, response, raw)

    async def aclose(self) -> None:
        await self._inner.aclose()


class _Limited(_SyncLimit, httpx.BaseTransport):
    _stream, _too_large, _late = _LimitedStream, BodyTooLarge, DeadlineExceeded
    _response = httpx.Response


class _AsyncLimited(_AsyncLimit, httpx.AsyncBaseTransport):
    _stream, _too_large, _late = _AsyncLimitedStream, BodyTooLarge, DeadlineExceeded
    _response = httpx.Response


class _Limited2(_SyncLimit, httpx2.BaseTransport):
    _stream, _too_large, _late = _LimitedStream2, BodyTooLarge2, DeadlineExceeded2
    _response = httpx2.Response


class _AsyncLimited2(_AsyncLimit, httpx2.AsyncBaseTransport):
    _stream, _too_large, _late = _AsyncLimitedStream2, BodyTooLarge2, DeadlineExceeded2
    _response = httpx2.Response


# --- pooled transports -----------------------------------------------------------------------------
# The guarded transports read REQUESTS_CA_BUNDLE when they are built: a pool is kept per bundle
# (tests switch it). Async pools belong to one event loop.

_lock = threading.Lock()
_sync_pools: dict[tuple[str, str | None], Any] = {}
_async_pools: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple[str, str | None], Any]] = (
    weakref.WeakKeyDictionary()
)


def _ca_key() -> str | None:
    return os.environ.get("REQUESTS_CA_BUNDLE")


def _sync_pool(kind: str) -> Any:
    key = (kind, _ca_key())
    pool = _sync_pools.get(key)
    if pool is None:
        with _lock:
            pool = _sync_pools.get(key)
            if pool is None:
                if kind == "httpx2":
                    pool = _Limited2(GuardedHTTPX2Transport(limits=POOL_LIMITS2, ai_private_hosts=True))
                else:
                    pool = _Limited(GuardedHTTPXTransport(limits=POOL_LIMITS, ai_private_hosts=True))
                _sync_pools[key] = pool
    return pool


def _async_pool(kind: str) -> Any:
    per_loop = _async_pools.setdefault(asyncio.get_running_loop(), {})
    key = (kind, _ca_key())
    pool = per_loop.get(key)
    if pool is None:
        if kind == "httpx2":
            pool = _AsyncLimited2(GuardedAsyncHTTPX2Transport(limits=POOL_LIMITS2, ai_private_hosts=True))
        else:
            pool = _AsyncLimited(GuardedAsyncHTTPXTransport(limits=POOL_LIMITS, ai_private_hosts=True))
        per_loop[key] = pool
    return pool


def httpx_client(base_url: str = "") -> httpx.Client:
    """An httpx client on the pooled guarded transport (never close it: the pool is shared)."""
    return httpx.Client(
        transport=_sync_pool("httpx"),
        base_url=base_url,
        timeout=PROVIDER_TIMEOUT,
        follow_redirects=False,
        trust_env=False,
    )


def async_httpx_client(base_url: str = "") -> httpx.AsyncClient:
    return httpx.AsyncClient(
        transport=_async_pool("httpx"),
        base_url=base_url,
        timeout=PROVIDER_TIMEOUT,
        follow_redirects=False,
        trust_env=False,
    )


def httpx2_client() -> httpx2.Client:
    return httpx2.Client(
        transport=_sync_pool("httpx2"), timeout=PROVIDER_TIMEOUT2, follow_redirects=False, trust_env=False
    )


def async_httpx2_client() -> httpx2.AsyncClient:
    return httpx2.AsyncClient(
        transport=_async_pool("httpx2"), timeout=PROVIDER_TIMEOUT2, follow_redirects=False, trust_env=False
    )
