"""The one client: a pooled guarded session (requests for general calls, libcurl on the process's
outbound thread for raw bodies: `send_bytes`, `submit_bytes`), each connection resolved, checked and
pinned, redirects followed only by hand and re-checked, bodies capped, a whole-call deadline."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import Future
from http.cookiejar import DefaultCookiePolicy
from typing import Any
from urllib.parse import urljoin, urlsplit

import requests
import urllib3
import urllib3.exceptions
from django.conf import settings
from requests.adapters import HTTPAdapter
from requests.structures import CaseInsensitiveDict
from requests.utils import requote_uri, rewind_body
from requests_hardened import Config, HTTPSession

from .curl import CurlTransport
from .deadline import _Deadline, _WatchedHTTPConnectionPool, _WatchedHTTPSConnectionPool
from .errors import OutboundBlocked, OutboundError
from .policy import (
    _DEFAULT_PORTS,
    HTTPS_ONLY,
    _check_declared_length,
    _log_blocked,
    _pin_target,
    check_url,
    safe_url,
)

logger = logging.getLogger("apps.platform.outbound")

DEFAULT_TIMEOUT: tuple[float, float] = (3.05, 10)
DEFAULT_MAX_BYTES = 10 * 1024 * 1024
_CHUNK_SIZE = 64 * 1024
_SENSITIVE_HEADERS = ("Authorization", "Proxy-Authorization", "Cookie")


class _PinnedAdapter(HTTPAdapter):
    """SECURITY: resolves, checks and pins every connection this session opens.

    requests asks the adapter for a connection pool before sending anything. Here the pool is keyed
    by the checked IP, so urllib3 connects to that IP and never resolves the name itself; SNI,
    certificate matching and the Host header are set back to the hostname.
    """

    def __init__(self, *, is_https: bool) -> None:
        super().__init__()
        self._is_https = is_https

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = {
            "http": _WatchedHTTPConnectionPool,
            "https": _WatchedHTTPSConnectionPool,
        }

    def build_connection_pool_key_attributes(
        self, request: requests.PreparedRequest, verify: Any, cert: Any = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        host_params, pool_kwargs = super().build_connection_pool_key_attributes(request, verify, cert)
        ip, name, host_header = _pin_target(host_params["host"] or "", host_params["scheme"], host_params["port"])
        # Copied first: the caller's headers mapping may be shared between requests.
        request.headers = CaseInsensitiveDict(request.headers or {})
        request.headers["Host"] = host_header
        if self._is_https:
            pool_kwargs["assert_hostname"] = name
            pool_kwargs["server_hostname"] = name

        host_params["host"] = f"[{ip}]" if ip.version == 6 else str(ip)
        return host_params, pool_kwargs

    def get_connection(self, url: Any, proxies: Any = None) -> Any:
        raise NotImplementedError("only get_connection_with_tls_context is guarded")


class _NoRedirectSession(HTTPSession):
    """requests-hardened session that cannot follow, or even look ahead at, a redirect.

    requests' Session.send pre-computes the next hop even with allow_redirects=False, reading the
    whole 3xx body without a limit; that look-ahead is switched off here.
    """

    def resolve_redirects(self, *args: Any, **kwargs: Any) -> Iterator[Any]:
        return iter(())


def _build_requests_session() -> _NoRedirectSession:
    config = Config(
        ip_filter_enable=False,  # replaced by _PinnedAdapter
        ip_filter_allow_loopback_ips=False,
        never_redirect=True,
        default_timeout=DEFAULT_TIMEOUT,
    )
    session = _NoRedirectSession(config)
    session.trust_env = False
    session.proxies = {}
    # A pooled session serves many tenants' endpoints: it must not carry cookies between them.
    session.cookies.set_policy(DefaultCookiePolicy(allowed_domains=[]))
    session.mount("https://", _PinnedAdapter(is_https=True))
    session.mount("http://", _PinnedAdapter(is_https=False))
    return session


def _ca_verify() -> str | bool:
    return os.environ.get("REQUESTS_CA_BUNDLE") or True


class GuardedResponse:
    """A read, size-capped response."""

    __slots__ = ("complete", "content", "encoding", "headers", "status_code", "url")

    def __init__(
        self,
        *,
        status_code: int,
        headers: CaseInsensitiveDict[str],
        content: bytes,
        url: str,
        encoding: str | None = None,
        complete: bool = True,
    ) -> None:
        self.status_code = status_code
        self.headers = headers
        self.content = content
        self.url = url
        self.encoding = encoding
        # False: the body broke off after a complete status line and headers (`send_bytes`,
        # `submit_bytes`: the answer is the status and headers; `content` is what arrived)
        self.complete = complete

    @property
    def text(self) -> str:
        return self.content.decode(self.encoding or "utf-8", errors="replace")

    @property
    def is_redirect(self) -> bool:
        return self.status_code in (301, 302, 303, 307, 308) and "location" in self.headers

    def json(self, **kwargs: Any) -> Any:
        return json.loads(self.content, **kwargs)

    def __repr__(self) -> str:
        return f"<GuardedResponse [{self.status_code}] {safe_url(self.url)}>"


def _transport_error(exc: requests.RequestException, url: str) -> OutboundError:
    # The original exception text carries the full path and query; only its class is kept.
    if isinstance(exc, requests.Timeout):
        reason = "timeout"
    elif isinstance(exc, requests.exceptions.SSLError):
        reason = "tls_error"
    elif isinstance(exc, requests.ConnectionError):
        inner = exc.args[0] if exc.args else None
        reason = "timeout" if isinstance(inner, urllib3.exceptions.ReadTimeoutError) else "connection_error"
    elif isinstance(exc, requests.exceptions.ChunkedEncodingError | requests.exceptions.ContentDecodingError):
        reason = "invalid_response"
    else:
        reason = "request_failed"
    return OutboundError(reason, url=url, detail=type(exc).__name__)


_FORBIDDEN_KWARGS = {
    "allow_redirects": "redirects are governed by max_redirects",
    "proxies": "proxies would bypass address pinning",
    "stream": "bodies are always streamed and capped by max_bytes",
    "verify": "verification is always on (REQUESTS_CA_BUNDLE is honoured)",
    "hooks": "hooks are not supported",
}


class GuardedSession:
    """A pooled guarded client: keeps connection pools across calls (webhook batches).

    Every call goes through the same checks as `request`. Cookies are never stored. Like
    requests.Session, it is not meant to be shared between threads: use one per worker.
    """

    def __init__(self) -> None:
        self._session = _build_requests_session()
        self._raw = CurlTransport()

    def __enter__(self) -> GuardedSession:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        self._session.close()
        self._raw.close()

    def request(
        self,
        method: str,
        url: str,
        *,
        max_redirects: int = 0,
        timeout: float | tuple[float, float] | None = DEFAULT_TIMEOUT,
        max_bytes: int = DEFAULT_MAX_BYTES,
        allowed_schemes: Iterable[str] = HTTPS_ONLY,
        deadline: float | None = None,
        **kwargs: Any,
    ) -> GuardedResponse:
        """Send one request and read its body, following at most `max_redirects` checked hops.
        `deadline` (seconds) bounds the whole call, however slowly the peer trickles bytes; without
        one, settings.OUTBOUND_DEADLINE_SECONDS does (the webhook attempts' deadline).

        Accepts the requests keywords params, data, json, headers, cookies, files, auth and cert.
        Raises OutboundBlocked (refused, nothing sent to the refused address) or OutboundError.
        """
        return self._watched(
            url,
            deadline,
            lambda: self._request(method, url, max_redirects, timeout, max_bytes, allowed_schemes, kwargs),
        )

    def send_bytes(
        self,
        method: str,
        url: str,
        *,
        body: bytes,
        headers: Mapping[str, str],
        timeout: float | tuple[float, float] | None = DEFAULT_TIMEOUT,
        max_bytes: int = DEFAULT_MAX_BYTES,
        allowed_schemes: Iterable[str] = HTTPS_ONLY,
        deadline: float | None = None,
    ) -> GuardedResponse:
        """Send an already encoded body as one request and read the answer, redirects never
        followed (a 3xx is the answer): `submit_bytes`, waited for."""
        return self.submit_bytes(
            method,
            url,
            body=body,
            headers=headers,
            timeout=timeout,
            max_bytes=max_bytes,
            allowed_schemes=allowed_schemes,
            deadline=deadline,
        ).result()

    def submit_bytes(
        self,
        method: str,
        url: str,
        *,
        body: bytes,
        headers: Mapping[str, str],
        timeout: float | tuple[float, float] | None = DEFAULT_TIMEOUT,
        max_bytes: int = DEFAULT_MAX_BYTES,
        allowed_schemes: Iterable[str] = HTTPS_ONLY,
        deadline: float | None = None,
    ) -> Future[GuardedResponse]:
        """Start one request with an already encoded body and return at once: the future gives the
        GuardedResponse, or raises OutboundBlocked / OutboundError. Many calls run at once on the
        process's outbound thread (libcurl, `curl`), which the webhook engine keeps 16 deep.
        The same guard as `request`: url shape, every resolved address checked and the connection
        pinned to it (SNI, certificate and Host keep the hostname), verification on
        (REQUESTS_CA_BUNDLE honoured), connect and read timeouts, the body capped, a whole-call
        `deadline` (else settings.OUTBOUND_DEADLINE_SECONDS), no cookies, no proxies, no redirect
        followed. Safe to call from any thread."""
        return self._raw.submit(
            method,
            url,
            body=body,
            headers=headers,
            timeout=timeout,
            max_bytes=max_bytes,
            allowed_schemes=allowed_schemes,
            deadline=deadline,
        )

    def _watched(self, url: str, deadline: float | None, call: Callable[[], GuardedResponse]) -> GuardedResponse:
        # Every call has a whole-call deadline: per-read timeouts alone let a server that trickles
        # one byte a second hold a call for minutes.
        watchdog = _Deadline(deadline if deadline is not None else settings.OUTBOUND_DEADLINE_SECONDS)
        try:
            with watchdog:
                result = call()
            if watchdog.fired:  # a body cut short by the watchdog may look complete: never trust it
                raise OutboundError("deadline_exceeded", url=safe_url(url))
            return result
        except OutboundBlocked as exc:
            _log_blocked(exc, url)
            raise
        except OutboundError as exc:
            if watchdog.fired:
                raise OutboundError("deadline_exceeded", url=exc.url) from None
            raise

    def _request(
        self,
        method: str,
        url: str,
        max_redirects: int,
        timeout: float | tuple[float, float] | None,
        max_bytes: int,
        allowed_schemes: Iterable[str],
        kwargs: dict[str, Any],
    ) -> GuardedResponse:
        for name, why in _FORBIDDEN_KWARGS.items():
            if name in kwargs:
                raise TypeError(f"{name} is not accepted: {why}")
        if max_redirects < 0:
            raise ValueError("max_redirects must be >= 0")
        timeout = timeout or DEFAULT_TIMEOUT
        allowed_schemes = frozenset(allowed_schemes)
        cert = kwargs.pop("cert", None)

        check_url(url, allowed_schemes=allowed_schemes)
        try:
            prepared = self._session.prepare_request(requests.Request(method=method.upper(), url=url, **kwargs))
        except (requests.exceptions.InvalidURL, requests.exceptions.MissingSchema, ValueError):
            raise OutboundBlocked("invalid_url", url=safe_url(url)) from None

        hops = 0
        while True:
            safe = safe_url(prepared.url)
            check_url(prepared.url, allowed_schemes=allowed_schemes)
            try:
                response = self._send_once(prepared, timeout=timeout, cert=cert, safe=safe)
            except OutboundBlocked as exc:
                exc.url = exc.url or safe
                raise
            location = self._session.get_redirect_target(response)
            if location is None or max_redirects == 0:
                return _read_capped(response, max_bytes=max_bytes, safe=safe)
            response.close()
            if hops >= max_redirects:
                logger.info("outbound %s: more than %d redirects", safe, max_redirects)
                raise OutboundError("too_many_redirects", url=safe)
            hops += 1
            prepared = self._next_hop(prepared, response, location)

    def _send_once(
        self, prepared: requests.PreparedRequest, *, timeout: Any, cert: Any, safe: str
    ) -> requests.Response:
        try:
            response = self._session.send(
                prepared,
                allow_redirects=False,
                stream=True,
                timeout=timeout,
                verify=_ca_verify(),
                cert=cert,
                proxies={},
            )
        except requests.RequestException as exc:
            error = _transport_error(exc, safe)
            logger.info("outbound %s %s failed: %s", prepared.method, safe, error.reason)
            raise error from None
        logger.debug("outbound %s %s -> %s", prepared.method, safe, response.status_code)
        return response

    def _next_hop(
        self, previous: requests.PreparedRequest, response: requests.Response, location: str
    ) -> requests.PreparedRequest:
        if location.startswith("//"):
            location = f"{urlsplit(previous.url).scheme}:{location}"
        try:
            target = urljoin(previous.url, requote_uri(location))
        except ValueError:
            raise OutboundBlocked("invalid_url") from None
        nxt = previous.copy()
        try:
            nxt.prepare_url(target, None)
        except (requests.exceptions.InvalidURL, requests.exceptions.MissingSchema, ValueError):
            raise OutboundBlocked("invalid_url", url=safe_url(target)) from None
        nxt.headers.pop("Host", None)
        self._session.rebuild_method(nxt, response)
        if response.status_code not in (307, 308):
            for header in ("Content-Length", "Content-Type", "Transfer-Encoding"):
                nxt.headers.pop(header, None)
            nxt.body = None
        elif nxt._body_position is not None:  # noqa: SLF001 - requests' own replay marker
            rewind_body(nxt)
        if _origin(previous.url) != _origin(nxt.url):
            for header in _SENSITIVE_HEADERS:
                nxt.headers.pop(header, None)
        return nxt


def _origin(url: str) -> tuple[str, str | None, int | None]:
    parts = urlsplit(url)
    return parts.scheme, parts.hostname, parts.port or _DEFAULT_PORTS.get(parts.scheme)


def _read_up_to(chunks: Iterable[bytes], max_bytes: int, safe: str) -> bytes:
    """The body from `chunks`; OutboundError("response_too_large") once it passes `max_bytes`
    (the caller closes the response: the rest is never read)."""
    body = bytearray()
    for chunk in chunks:
        body += chunk
        if len(body) > max_bytes:
            logger.info("outbound %s: body over %d bytes", safe, max_bytes)
            raise OutboundError("response_too_large", url=safe)
    return bytes(body)


def _read_capped(response: requests.Response, *, max_bytes: int, safe: str) -> GuardedResponse:
    try:
        _check_declared_length(response.headers, max_bytes, safe)
        body = _read_up_to(response.iter_content(chunk_size=min(_CHUNK_SIZE, max_bytes + 1)), max_bytes, safe)
    except OutboundError:
        response.close()
        raise
    except requests.RequestException as exc:
        response.close()
        raise _transport_error(exc, safe) from None
    return GuardedResponse(
        status_code=response.status_code,
        headers=CaseInsensitiveDict(response.headers),
        content=body,
        url=response.url,
        encoding=response.encoding,
    )


def get_session() -> GuardedSession:
    """A new pooled guarded session; close it (or use it as a context manager) when done."""
    return GuardedSession()


def request(
    method: str,
    url: str,
    *,
    max_redirects: int = 0,
    timeout: float | tuple[float, float] | None = DEFAULT_TIMEOUT,
    max_bytes: int = DEFAULT_MAX_BYTES,
    allowed_schemes: Iterable[str] = HTTPS_ONLY,
    **kwargs: Any,
) -> GuardedResponse:
    """One guarded call on a fresh session. See GuardedSession.request."""
    with GuardedSession() as session:
        return session.request(
            method,
            url,
            max_redirects=max_redirects,
            timeout=timeout,
            max_bytes=max_bytes,
            allowed_schemes=allowed_schemes,
            **kwargs,
        )
