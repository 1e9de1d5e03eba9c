"""Every SDK's HTTP goes through the guarded outbound transport (apps.core.outbound), with a whole-call
budget on top: the deadline, the number of provider HTTP operations and the response body cap.

- `_Limited` / `_AsyncLimited` wrap `GuardedHTTPXTransport` / `GuardedAsyncHTTPXTransport` (the
  address policy, pinning, TLS rules, no redirects, no proxies or environment). Before each request
  they take one operation from the current `Budget` and clamp the request's timeouts to the time
  left; they cap the response body (declared and streamed) and stop a body still trickling at the
  deadline.
- The OpenAI SDK and the GigaChat SDK take an `httpx` client; the Anthropic SDK takes only an
  `httpx2` client, so `_Httpx2Bridge` / `_AsyncHttpx2Bridge` hand its requests to the same guarded
  `httpx` transport and map the errors back.
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

from apps.core.outbound import DEFAULT_MAX_BYTES, GuardedAsyncHTTPXTransport, GuardedHTTPXTransport

# An LLM may think for a while before its first byte: reads wait up to 60 s, always bounded by the
# call's deadline.
PROVIDER_TIMEOUT = httpx.Timeout(60.0, connect=5.0)
PROVIDER_TIMEOUT2 = httpx2.Timeout(60.0, connect=5.0)
MAX_RESPONSE_BYTES = DEFAULT_MAX_BYTES  # 10 MiB: a synthesized speech answer fits


class DeadlineExceeded(httpx.ReadTimeout):
    """The call's deadline passed (before sending, or while a body was still arriving)."""


class BodyTooLarge(httpx.RemoteProtocolError):
    """The response body is over MAX_RESPONSE_BYTES."""


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


def _admit(request: httpx.Request) -> Budget | None:
    budget = current_budget.get()
    if budget is None:
        return None
    remaining = budget.remaining()
    if remaining <= 0:
        raise DeadlineExceeded("deadline passed", request=request)
    budget.take_operation()
    cap = remaining if budget.attempt_timeout is None else min(remaining, budget.attempt_timeout)
    timeouts = dict(request.extensions.get("timeout") or {})
    for name in ("connect", "read", "write", "pool"):
        value = timeouts.get(name)
        timeouts[name] = cap if value is None else min(value, cap)
    request.extensions = {**request.extensions, "timeout": timeouts}
    return budget


def _declared_too_large(response: httpx.Response) -> bool:
    declared = response.headers.get("content-length", "")
    return declared.isascii() and declared.isdigit() and int(declared) > MAX_RESPONSE_BYTES


class _LimitedStream(httpx.SyncByteStream):
    def __init__(self, inner: Any, deadline: float | None) -> None:
        self._inner = inner
        self._deadline = deadline

    def __iter__(self) -> Iterator[bytes]:
        received = 0
        for chunk in self._inner:
            received += len(chunk)
            if received > MAX_RESPONSE_BYTES:
                raise BodyTooLarge("response body over the cap")
            if self._deadline is not None and time.monotonic() > self._deadline:
                raise DeadlineExceeded("deadline passed while reading")
            yield chunk

    def close(self) -> None:
        self._inner.close()


class _AsyncLimitedStream(httpx.AsyncByteStream):
    def __init__(self, inner: Any, deadline: float | None) -> None:
        self._inner = inner
        self._deadline = deadline

    async def __aiter__(self) -> AsyncIterator[bytes]:
        received = 0
        async for chunk in self._inner:
            received += len(chunk)
            if received > MAX_RESPONSE_BYTES:
                raise BodyTooLarge("response body over the cap")
            if self._deadline is not None and time.monotonic() > self._deadline:
                raise DeadlineExceeded("deadline passed while reading")
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


class _Limited(httpx.BaseTransport):
    def __init__(self, inner: GuardedHTTPXTransport) -> None:
        self._inner = inner

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        budget = _admit(request)
        response = self._inner.handle_request(request)
        if _declared_too_large(response):
            response.close()
            raise BodyTooLarge("response body over the cap")
        response.stream = _LimitedStream(response.stream, budget.deadline if budget else None)
        return response

    def close(self) -> None:
        self._inner.close()


class _AsyncLimited(httpx.AsyncBaseTransport):
    def __init__(self, inner: GuardedAsyncHTTPXTransport) -> None:
        self._inner = inner

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        budget = _admit(request)
        response = await self._inner.handle_async_request(request)
        if _declared_too_large(response):
            await response.aclose()
            raise BodyTooLarge("response body over the cap")
        response.stream = _AsyncLimitedStream(response.stream, budget.deadline if budget else None)
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()


# --- the httpx2 bridge (Anthropic SDK) -------------------------------------------------------------


def _to_httpx2_error(exc: httpx.HTTPError, request: httpx2.Request | None) -> Exception:
    """The httpx2 exception of the same name, so the SDK classifies it as it would its own."""
    cls = getattr(httpx2, type(exc).__name__, None)
    if not (isinstance(cls, type) and issubclass(cls, httpx2.RequestError)):
        for base in type(exc).__mro__:
            cls = getattr(httpx2, base.__name__, None)
            if isinstance(cls, type) and issubclass(cls, httpx2.RequestError):
                break
        else:
            cls = httpx2.TransportError
    return cls(type(exc).__name__, request=request)


def _to_legacy_request(request: httpx2.Request, body: bytes) -> httpx.Request:
    return httpx.Request(
        request.method,
        str(request.url),
        headers=list(request.headers.raw),
        content=body,
        extensions=dict(request.extensions),
    )


class _Httpx2Stream(httpx2.SyncByteStream):
    def __init__(self, inner: Any, request: httpx2.Request) -> None:
        self._inner = inner
        self._request = request

    def __iter__(self) -> Iterator[bytes]:
        try:
            yield from self._inner
        except httpx.HTTPError as exc:
            raise _to_httpx2_error(exc, self._request) from exc

    def close(self) -> None:
        self._inner.close()


class _AsyncHttpx2Stream(httpx2.AsyncByteStream):
    def __init__(self, inner: Any, request: httpx2.Request) -> None:
        self._inner = inner
        self._request = request

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._inner:
                yield chunk
        except httpx.HTTPError as exc:
            raise _to_httpx2_error(exc, self._request) from exc

    async def aclose(self) -> None:
        await self._inner.aclose()


class _Httpx2Bridge(httpx2.BaseTransport):
    def __init__(self, inner: httpx.BaseTransport) -> None:
        self._inner = inner

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        legacy = _to_legacy_request(request, request.read())
        try:
            response = self._inner.handle_request(legacy)
        except httpx.HTTPError as exc:
            raise _to_httpx2_error(exc, request) from exc
        return httpx2.Response(
            response.status_code,
            headers=list(response.headers.raw),
            stream=_Httpx2Stream(response.stream, request),
            extensions=response.extensions,
        )


class _AsyncHttpx2Bridge(httpx2.AsyncBaseTransport):
    def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
        self._inner = inner

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        legacy = _to_legacy_request(request, await request.aread())
        try:
            response = await self._inner.handle_async_request(legacy)
        except httpx.HTTPError as exc:
            raise _to_httpx2_error(exc, request) from exc
        return httpx2.Response(
            response.status_code,
            headers=list(response.headers.raw),
            stream=_AsyncHttpx2Stream(response.stream, request),
            extensions=response.extensions,
        )


# --- pooled transports -----------------------------------------------------------------------------
# The guarded transport reads REQUESTS_CA_BUNDLE when it is built: a pool is kept per bundle (tests
# switch it). Async pools belong to one event loop.

_lock = threading.Lock()
_sync_transports: dict[str | None, _Limited] = {}
_async_transports: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str | None, _AsyncLimited]] = (
    weakref.WeakKeyDictionary()
)


def _ca_key() -> str | None:
    return os.environ.get("REQUESTS_CA_BUNDLE")


def sync_transport() -> _Limited:
    key = _ca_key()
    transport = _sync_transports.get(key)
    if transport is None:
        with _lock:
            transport = _sync_transports.get(key)
            if transport is None:
                transport = _sync_transports[key] = _Limited(GuardedHTTPXTransport())
    return transport


def async_transport() -> _AsyncLimited:
    loop = asyncio.get_running_loop()
    per_loop = _async_transports.setdefault(loop, {})
    key = _ca_key()
    transport = per_loop.get(key)
    if transport is None:
        transport = per_loop[key] = _AsyncLimited(GuardedAsyncHTTPXTransport())
    return transport


def httpx_client(base_url: str = "") -> httpx.Client:
    """An httpx client on the pooled guarded transport (never close it: the pool is shared)."""
    return httpx.Client(
        transport=sync_transport(), base_url=base_url, timeout=PROVIDER_TIMEOUT, follow_redirects=False, trust_env=False
    )


def async_httpx_client(base_url: str = "") -> httpx.AsyncClient:
    return httpx.AsyncClient(
        transport=async_transport(),
        base_url=base_url,
        timeout=PROVIDER_TIMEOUT,
        follow_redirects=False,
        trust_env=False,
    )


def httpx2_client() -> httpx2.Client:
    return httpx2.Client(
        transport=_Httpx2Bridge(sync_transport()), timeout=PROVIDER_TIMEOUT2, follow_redirects=False, trust_env=False
    )


def async_httpx2_client() -> httpx2.AsyncClient:
    return httpx2.AsyncClient(
        transport=_AsyncHttpx2Bridge(async_transport()),
        timeout=PROVIDER_TIMEOUT2,
        follow_redirects=False,
        trust_env=False,
    )
