"""The LLM SDK transport: httpx transports and clients (sync and async) for SDKs that take an
`http_client` (OpenAI, Anthropic and compatible). Built on the same address policy and pinning as
the client: the URL is checked before sending, every new connection is resolved, checked and pinned
to the checked address, redirects are never followed, no proxies or environment.

`guarded_transport_classes` builds the transports for one httpx lineage; `httpx2_transport` uses it
for httpx2/httpcore2, so both lineages share one implementation."""

from __future__ import annotations

import logging
import os
import ssl
from collections.abc import Iterable
from typing import Any

import anyio.to_thread
import certifi
import httpcore
import httpx

from .client import DEFAULT_TIMEOUT
from .errors import OutboundBlocked
from .policy import (
    _SUPPORTED_SCHEMES,
    HTTPS_ONLY,
    NO_PRIVATE_HOSTS,
    _allow_loopback,
    _log_blocked,
    ai_private_hosts,
    pin_address,
    safe_url,
)

logger = logging.getLogger("apps.platform.outbound")

DEFAULT_HTTPX_TIMEOUT = httpx.Timeout(DEFAULT_TIMEOUT[1], connect=DEFAULT_TIMEOUT[0])


def _ssl_context() -> ssl.SSLContext:
    bundle = os.environ.get("REQUESTS_CA_BUNDLE")
    if bundle and os.path.isdir(bundle):
        return ssl.create_default_context(capath=bundle)
    return ssl.create_default_context(cafile=bundle or certifi.where())


def guarded_transport_classes(httpx_lib: Any, httpcore_lib: Any, *, suffix: str) -> tuple[type, type]:
    """The guarded sync and async transports for one httpx lineage (`httpx`/`httpcore`, or the
    `httpx2`/`httpcore2` twins the newer LLM SDKs are built on): the same classes on either library,
    named `Guarded{suffix}Transport` and `GuardedAsync{suffix}Transport`.

    SECURITY: the URL is checked before sending; httpcore asks the guarded network backend for every
    TCP connection and it connects to the checked IP (httpcore keeps the hostname for SNI and
    certificate matching, and the Host header comes from the request, so only the socket address is
    pinned); unix sockets are refused; redirects are never followed by a transport (a client told to
    follow them sends each hop through here); proxies and environment settings are not available.
    """

    def check_url(url: Any, allowed_schemes: frozenset[str], private_hosts: Any) -> None:
        safe = safe_url(str(url))
        listed_http = url.scheme.lower() == "http" and private_hosts.lists_host(url.host, url.port or 80)
        if url.scheme.lower() not in allowed_schemes and not listed_http:
            raise OutboundBlocked("scheme_not_allowed", url=safe)
        if url.userinfo:
            raise OutboundBlocked("userinfo_not_allowed", url=safe)
        if not url.host:
            raise OutboundBlocked("missing_host", url=safe)

    class GuardedBackend(httpcore_lib.NetworkBackend):
        """SECURITY: connects every TCP connection to the checked, pinned address."""

        def __init__(self, inner: Any, *, ai_private_hosts: bool) -> None:
            self._inner = inner
            self._ai_private_hosts = ai_private_hosts

        def connect_tcp(
            self,
            host: str,
            port: int,
            timeout: float | None = None,
            local_address: str | None = None,
            socket_options: Iterable[Any] | None = None,
        ) -> Any:
            ip = pin_address(host, port, private_hosts=_private_hosts(self._ai_private_hosts))
            return self._inner.connect_tcp(
                str(ip), port, timeout=timeout, local_address=local_address, socket_options=socket_options
            )

        def connect_unix_socket(self, *args: Any, **kwargs: Any) -> Any:
            raise OutboundBlocked("unix_socket_not_allowed")

        def sleep(self, seconds: float) -> None:
            self._inner.sleep(seconds)

    class GuardedAsyncBackend(httpcore_lib.AsyncNetworkBackend):
        """Async twin of GuardedBackend; resolution runs in a worker thread."""

        def __init__(self, inner: Any, *, ai_private_hosts: bool) -> None:
            self._inner = inner
            self._ai_private_hosts = ai_private_hosts

        async def connect_tcp(
            self,
            host: str,
            port: int,
            timeout: float | None = None,
            local_address: str | None = None,
            socket_options: Iterable[Any] | None = None,
        ) -> Any:
            allow_loopback = _allow_loopback()
            private = _private_hosts(self._ai_private_hosts)
            ip = await anyio.to_thread.run_sync(
                lambda: pin_address(host, port, allow_loopback=allow_loopback, private_hosts=private)
            )
            return await self._inner.connect_tcp(
                str(ip), port, timeout=timeout, local_address=local_address, socket_options=socket_options
            )

        async def connect_unix_socket(self, *args: Any, **kwargs: Any) -> Any:
            raise OutboundBlocked("unix_socket_not_allowed")

        async def sleep(self, seconds: float) -> None:
            await self._inner.sleep(seconds)

    pools = (httpcore_lib.ConnectionPool, httpcore_lib.AsyncConnectionPool)
    default_limits = httpx_lib.Limits(max_connections=100, max_keepalive_connections=20)

    def install_backend(pool: Any, wrap: type, ai_private_hosts: bool) -> None:
        # httpx builds its httpcore pool privately; if that ever changes, fail at construction rather
        # than run unguarded.
        inner = getattr(pool, "_network_backend", None)
        if not isinstance(pool, pools) or inner is None:
            raise RuntimeError(
                f"{httpx_lib.__name__}/{httpcore_lib.__name__} internals changed: "
                "the outbound guard cannot be installed"
            )
        pool._network_backend = wrap(inner, ai_private_hosts=ai_private_hosts)  # noqa: SLF001

    class GuardedSetup:
        """The construction both transports share: our TLS context, no environment, and the guarded
        network backend (`_backend`) installed in the private httpcore pool.

        `ai_private_hosts` is for the AI provider transports alone: their connections may reach the
        owner's model servers listed in settings.AI_PRIVATE_HOSTS (read at every connection), and
        `http://` to a listed host (policy.PrivateHosts). Every other caller keeps the plain policy.
        """

        _backend: type

        def __init__(
            self,
            *,
            allowed_schemes: Iterable[str] = HTTPS_ONLY,
            cert: Any = None,
            http1: bool = True,
            http2: bool = False,
            limits: Any = default_limits,
            retries: int = 0,
            ai_private_hosts: bool = False,
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
            self._ai_private_hosts = ai_private_hosts
            install_backend(self._pool, self._backend, ai_private_hosts)  # type: ignore[attr-defined]

    class Transport(GuardedSetup, httpx_lib.HTTPTransport):
        """httpx transport with the outbound guard, for SDKs that take an `http_client`."""

        _backend = GuardedBackend

        def handle_request(self, request: Any) -> Any:
            try:
                check_url(request.url, self._allowed_schemes, _private_hosts(self._ai_private_hosts))
                return super().handle_request(request)
            except OutboundBlocked as exc:
                _log_blocked(exc, str(request.url))
                raise

    class AsyncTransport(GuardedSetup, httpx_lib.AsyncHTTPTransport):
        """Async twin of the guarded transport."""

        _backend = GuardedAsyncBackend

        async def handle_async_request(self, request: Any) -> Any:
            try:
                check_url(request.url, self._allowed_schemes, _private_hosts(self._ai_private_hosts))
                return await super().handle_async_request(request)
            except OutboundBlocked as exc:
                _log_blocked(exc, str(request.url))
                raise

    for cls, name in ((Transport, f"Guarded{suffix}Transport"), (AsyncTransport, f"GuardedAsync{suffix}Transport")):
        cls.__name__ = cls.__qualname__ = name
    return Transport, AsyncTransport


def _private_hosts(enabled: bool) -> Any:
    return ai_private_hosts() if enabled else NO_PRIVATE_HOSTS


GuardedHTTPXTransport, GuardedAsyncHTTPXTransport = guarded_transport_classes(httpx, httpcore, suffix="HTTPX")


_TRANSPORT_KWARGS = ("cert", "http1", "http2", "limits")
_FORBIDDEN_CLIENT_KWARGS = ("transport", "mounts", "proxy", "verify", "trust_env", "follow_redirects", "app")


def _client_kwargs(kwargs: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    for name in _FORBIDDEN_CLIENT_KWARGS:
        if name in kwargs:
            raise TypeError(f"{name} is fixed by the outbound guard")
    transport_kwargs = {name: kwargs.pop(name) for name in _TRANSPORT_KWARGS if name in kwargs}
    if kwargs.get("timeout") is None:
        kwargs["timeout"] = DEFAULT_HTTPX_TIMEOUT
    return transport_kwargs, kwargs


def guarded_httpx_client(*, allowed_schemes: Iterable[str] = HTTPS_ONLY, **kwargs: Any) -> httpx.Client:
    """An httpx.Client on GuardedHTTPXTransport: no redirects, no environment, timeouts set.

    Accepts httpx.Client keywords (base_url, headers, auth, timeout, ...) plus cert, http1, http2 and
    limits for the transport.
    """
    transport_kwargs, client_kwargs = _client_kwargs(dict(kwargs))
    transport = GuardedHTTPXTransport(allowed_schemes=allowed_schemes, **transport_kwargs)
    return httpx.Client(transport=transport, follow_redirects=False, trust_env=False, **client_kwargs)


def guarded_async_httpx_client(*, allowed_schemes: Iterable[str] = HTTPS_ONLY, **kwargs: Any) -> httpx.AsyncClient:
    """Async twin of guarded_httpx_client."""
    transport_kwargs, client_kwargs = _client_kwargs(dict(kwargs))
    transport = GuardedAsyncHTTPXTransport(allowed_schemes=allowed_schemes, **transport_kwargs)
    return httpx.AsyncClient(transport=transport, follow_redirects=False, trust_env=False, **client_kwargs)
