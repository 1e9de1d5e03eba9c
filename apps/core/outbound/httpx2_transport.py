"""The guarded transport for `httpx2` (the HTTP library the OpenAI and Anthropic SDKs are built on
since their 3.x / 2.x releases): the twin of `httpx_transport` on httpx2/httpcore2, with the same
address policy, pinning, TLS context and refusals. The URL is checked before sending, every new
connection is resolved, checked and pinned to the checked address (SNI, certificate and Host keep
the hostname), redirects are never followed, no proxies, unix sockets or environment.

Anthropic's SDK accepts only an httpx2 client, and httpcore2's async pool serves many requests in
flight several times faster than httpcore 1's, which matters for provider calls awaited by an ASGI
web process.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import anyio.to_thread
import httpcore2
import httpx2

from .errors import OutboundBlocked
from .httpx_transport import _ssl_context
from .policy import _SUPPORTED_SCHEMES, HTTPS_ONLY, _allow_loopback, _log_blocked, pin_address, safe_url


def _check_url(url: httpx2.URL, allowed_schemes: frozenset[str]) -> None:
    safe = safe_url(str(url))
    if url.scheme.lower() not in allowed_schemes:
        raise OutboundBlocked("scheme_not_allowed", url=safe)
    if url.userinfo:
        raise OutboundBlocked("userinfo_not_allowed", url=safe)
    if not url.host:
        raise OutboundBlocked("missing_host", url=safe)


class _GuardedBackend(httpcore2.NetworkBackend):
    """SECURITY: httpcore2 asks this backend for every TCP connection; it connects to the checked IP."""

    def __init__(self, inner: httpcore2.NetworkBackend) -> None:
        self._inner = inner

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.NetworkStream:
        ip = pin_address(host, port)
        return self._inner.connect_tcp(
            str(ip), port, timeout=timeout, local_address=local_address, socket_options=socket_options
        )

    def connect_unix_socket(self, *args: Any, **kwargs: Any) -> httpcore2.NetworkStream:
        raise OutboundBlocked("unix_socket_not_allowed")

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


class _GuardedAsyncBackend(httpcore2.AsyncNetworkBackend):
    """Async twin of _GuardedBackend; resolution runs in a worker thread."""

    def __init__(self, inner: httpcore2.AsyncNetworkBackend) -> None:
        self._inner = inner

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        allow_loopback = _allow_loopback()
        ip = await anyio.to_thread.run_sync(lambda: pin_address(host, port, allow_loopback=allow_loopback))
        return await self._inner.connect_tcp(
            str(ip), port, timeout=timeout, local_address=local_address, socket_options=socket_options
        )

    async def connect_unix_socket(self, *args: Any, **kwargs: Any) -> httpcore2.AsyncNetworkStream:
        raise OutboundBlocked("unix_socket_not_allowed")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


def _install_backend(pool: Any, wrap: type) -> None:
    # httpx2 builds its httpcore2 pool privately; if that ever changes, fail at construction rather
    # than run unguarded.
    inner = getattr(pool, "_network_backend", None)
    if not isinstance(pool, httpcore2.ConnectionPool | httpcore2.AsyncConnectionPool) or inner is None:
        raise RuntimeError("httpx2/httpcore2 internals changed: the outbound guard cannot be installed")
    pool._network_backend = wrap(inner)  # noqa: SLF001


_DEFAULT_LIMITS = httpx2.Limits(max_connections=100, max_keepalive_connections=20)


class _GuardedSetup:
    _backend: type

    def __init__(
        self,
        *,
        allowed_schemes: Iterable[str] = HTTPS_ONLY,
        cert: Any = None,
        http1: bool = True,
        http2: bool = False,
        limits: httpx2.Limits = _DEFAULT_LIMITS,
        retries: int = 0,
    ) -> None:
        super().__init__(  # type: ignore[call-arg]
            verify=_ssl_context(),
            cert=cert,
            trust_env=False,
            http1=http1,
            http2=http2,
            limits=limits,
            retries=retries,
        )
        self._allowed_schemes = frozenset(s.lower() for s in allowed_schemes) & _SUPPORTED_SCHEMES
        _install_backend(self._pool, self._backend)  # type: ignore[attr-defined]


class GuardedHTTPX2Transport(_GuardedSetup, httpx2.HTTPTransport):
    """httpx2 transport with the outbound guard (see the module docstring)."""

    _backend = _GuardedBackend

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        try:
            _check_url(request.url, self._allowed_schemes)
            return super().handle_request(request)
        except OutboundBlocked as exc:
            _log_blocked(exc, str(request.url))
            raise


class GuardedAsyncHTTPX2Transport(_GuardedSetup, httpx2.AsyncHTTPTransport):
    """Async twin of GuardedHTTPX2Transport."""

    _backend = _GuardedAsyncBackend

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        try:
            _check_url(request.url, self._allowed_schemes)
            return await super().handle_async_request(request)
        except OutboundBlocked as exc:
            _log_blocked(exc, str(request.url))
            raise
