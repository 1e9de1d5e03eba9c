"""`GuardedSession.send_bytes` and `submit_bytes` on aiohttp: many small requests in flight at once
from one event loop thread per process, with the same guard as every other call of this package.

Why a loop and not a thread per request: the webhook engine keeps 16 attempts in flight. On a
thread pool over urllib3 every attempt cost about 0.9 ms of CPU in http.client and urllib3 plus the
interpreter lock passed between 16 threads (1.5 ms an attempt in all); aiohttp's C parser on one
loop costs about 0.36 ms a request against the same receiver, and nothing else waits for the lock.

The guard, per call, before anything is sent:

- the URL's shape (`check_url`: scheme, userinfo, host, port);
- the host resolved once (in the loop's executor, so a slow DNS answer holds no other request),
  every address checked (`pin_address`), and the request sent to that exact address; the pool is
  keyed by the address and the TLS name, so a connection is reused only for the same checked
  address and the same verified name;
- TLS verification on (`REQUESTS_CA_BUNDLE` honoured), SNI, certificate matching and `Host` keep
  the hostname;
- no redirect followed (a 3xx is the answer), no cookies kept, no proxy or netrc from the
  environment;
- connect and read timeouts, the body capped at `max_bytes` (declared or streamed), and a deadline
  over the whole call (`deadline_exceeded`), however slowly the peer trickles bytes.

The loop (uvloop: its TLS and transports are compiled, a tenth less CPU an attempt than asyncio's
own) runs on a daemon thread started on first use and again in a forked child (Celery's prefork
pool). Each `GuardedSession` has its own aiohttp session (its own pooled connections), closed with
it.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import logging
import os
import ssl
import threading
import weakref
from collections.abc import Iterable, Mapping
from concurrent.futures import Future
from typing import Any

import aiohttp
import certifi
import uvloop
from django.conf import settings
from requests.structures import CaseInsensitiveDict
from yarl import URL

from .errors import OutboundBlocked, OutboundError
from .policy import (
    _DEFAULT_PORTS,
    _check_declared_length,
    _log_blocked,
    _pin_target,
    check_url,
    parse_ip_literal,
    safe_url,
)

logger = logging.getLogger("apps.core.outbound")

_CHUNK_SIZE = 64 * 1024
# Upper bound of one session's open connections (its callers bound what they keep in flight).
CONNECTIONS = 100


class _LoopThread:
    """The process's outbound event loop, run by one daemon thread (started again after a fork)."""

    def __init__(self) -> None:
        self.loop: asyncio.AbstractEventLoop | None = None
        self.pid = 0
        self.lock = threading.Lock()

    def get(self) -> asyncio.AbstractEventLoop:
        if self.pid != os.getpid():
            with self.lock:
                if self.pid != os.getpid():
                    loop = uvloop.new_event_loop()
                    threading.Thread(target=loop.run_forever, name="outbound-loop", daemon=True).start()
                    self.loop, self.pid = loop, os.getpid()
        assert self.loop is not None
        return self.loop


_loop_thread = _LoopThread()

_contexts: dict[str, ssl.SSLContext] = {}


def _ssl_context() -> ssl.SSLContext:
    """A verifying context for the CA bundle in force (REQUESTS_CA_BUNDLE, else certifi's), made once
    per bundle: the pool keys connections by it."""
    bundle = os.environ.get("REQUESTS_CA_BUNDLE") or certifi.where()
    context = _contexts.get(bundle)
    if context is None:
        context = _contexts[bundle] = ssl.create_default_context(cafile=bundle)
    return context


_open_transports: weakref.WeakSet[AioTransport] = weakref.WeakSet()


@atexit.register
def _close_open_transports() -> None:
    for transport in list(_open_transports):
        with contextlib.suppress(Exception):  # the process is exiting: nothing left to tell
            transport.close()


def _reason(exc: BaseException) -> str:
    """The transport reason of an aiohttp or socket failure (the OutboundError's `reason`)."""
    if isinstance(exc, aiohttp.ClientSSLError | ssl.SSLError):
        return "tls_error"
    if isinstance(exc, TimeoutError):  # aiohttp's connect and read timeouts are TimeoutErrors too
        return "timeout"
    if isinstance(exc, aiohttp.ClientPayloadError | aiohttp.ClientResponseError):
        return "invalid_response"
    return "connection_error"


class AioTransport:
    """One guarded session's aiohttp side: its connections, opened and used on the loop thread.
    Closed with its session; one dropped unclosed is closed when collected, and every one still
    open when the process exits."""

    def __init__(self) -> None:
        self._client: aiohttp.ClientSession | None = None
        self._pid = 0
        _open_transports.add(self)

    def __del__(self) -> None:
        client = self._client
        if client is not None and self._pid == os.getpid() and not client.closed:
            loop = _loop_thread.loop
            if loop is not None and loop.is_running():
                loop.call_soon_threadsafe(lambda: loop.create_task(client.close()))

    def submit(
        self,
        method: str,
        url: str,
        *,
        body: bytes,
        headers: Mapping[str, str],
        timeout: float | tuple[float, float] | None,
        max_bytes: int,
        allowed_schemes: Iterable[str],
        deadline: float | None,
    ) -> Future:
        """Start one call on the loop; the future gives its GuardedResponse or raises
        OutboundBlocked / OutboundError."""
        call = self._call(method, url, body, dict(headers), timeout, max_bytes, frozenset(allowed_schemes), deadline)
        return asyncio.run_coroutine_threadsafe(call, _loop_thread.get())

    def close(self) -> None:
        client, self._client = self._client, None
        if client is not None and self._pid == os.getpid() and not client.closed:
            asyncio.run_coroutine_threadsafe(client.close(), _loop_thread.get()).result(timeout=10)

    def _session(self) -> aiohttp.ClientSession:
        if self._client is None or self._pid != os.getpid():  # a forked child opens its own
            self._client = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=CONNECTIONS, limit_per_host=0),
                cookie_jar=aiohttp.DummyCookieJar(),  # a pooled session serves many tenants
                trust_env=False,  # no proxy or netrc from the environment
                headers={"Accept-Encoding": "identity"},
                skip_auto_headers=("Content-Type",),
            )
            self._pid = os.getpid()
        return self._client

    async def _call(
        self,
        method: str,
        url: str,
        body: bytes,
        headers: dict[str, str],
        timeout: float | tuple[float, float] | None,
        max_bytes: int,
        allowed_schemes: frozenset[str],
        deadline: float | None,
    ) -> Any:
        from .client import GuardedResponse

        seconds = deadline if deadline is not None else settings.OUTBOUND_DEADLINE_SECONDS
        safe = safe_url(url)
        try:
            async with asyncio.timeout(seconds) as whole_call:
                try:
                    status, response_headers, content = await self._exchange(
                        method, url, safe, body, headers, timeout, max_bytes, allowed_schemes
                    )
                except TimeoutError:
                    if whole_call.expired():
                        raise
                    logger.info("outbound %s %s failed: timeout", method.upper(), safe)
                    raise OutboundError("timeout", url=safe) from None
        except TimeoutError:
            raise OutboundError("deadline_exceeded", url=safe) from None
        except OutboundBlocked as exc:
            _log_blocked(exc, url)
            raise
        return GuardedResponse(status_code=status, headers=response_headers, content=content, url=url)

    async def _exchange(
        self,
        method: str,
        url: str,
        safe: str,
        body: bytes,
        headers: dict[str, str],
        timeout: float | tuple[float, float] | None,
        max_bytes: int,
        allowed_schemes: frozenset[str],
    ) -> tuple[int, CaseInsensitiveDict[str], bytes]:
        parts = check_url(url, allowed_schemes=allowed_schemes)
        scheme = parts.scheme.lower()
        port = parts.port or _DEFAULT_PORTS[scheme]
        hostname = parts.hostname or ""
        if parse_ip_literal(hostname) is None:  # a name: resolved off the loop
            ip, name, host_header = await asyncio.get_running_loop().run_in_executor(
                None, _pin_target, hostname, scheme, parts.port
            )
        else:
            ip, name, host_header = _pin_target(hostname, scheme, parts.port)
        target = URL.build(
            scheme=scheme,
            host=str(ip),
            port=port,
            path=parts.path or "/",
            query_string=parts.query,
            encoded=True,
        )
        connect, read = timeout if isinstance(timeout, tuple) else (timeout, timeout)
        tls: dict[str, Any] = {"ssl": _ssl_context(), "server_hostname": name} if scheme == "https" else {"ssl": False}
        response = None
        try:
            response = await self._session().request(
                method.upper(),
                target,
                data=body,
                headers={**headers, "Host": host_header},
                allow_redirects=False,
                timeout=aiohttp.ClientTimeout(total=None, sock_connect=connect, sock_read=read),
                **tls,
            )
            _check_declared_length(response.headers, max_bytes, safe)
            content = bytearray()
            async for chunk in response.content.iter_chunked(min(_CHUNK_SIZE, max_bytes + 1)):
                content += chunk
                if len(content) > max_bytes:
                    logger.info("outbound %s: body over %d bytes", safe, max_bytes)
                    raise OutboundError("response_too_large", url=safe)
        except OutboundError:
            if response is not None:
                response.close()  # the rest is never read: the connection is not reused
            raise
        except (aiohttp.ClientError, OSError) as exc:
            if response is not None:
                response.close()
            error = OutboundError(_reason(exc), url=safe, detail=type(exc).__name__)
            logger.info("outbound %s %s failed: %s", method.upper(), safe, error.reason)
            raise error from None
        response.release()
        logger.debug("outbound %s %s -> %s", method.upper(), safe, response.status)
        merged: CaseInsensitiveDict[str] = CaseInsensitiveDict()
        for key, value in response.headers.items():  # repeated fields joined, as urllib3 joins them
            merged[key] = f"{merged[key]}, {value}" if key in merged else value
        return response.status, merged, bytes(content)
