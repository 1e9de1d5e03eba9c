"""The one guarded outbound HTTP client.

SECURITY: every call to an address a user can influence (webhooks, file fetch by url, LLM
``base_url``, crawler, messenger URLs) goes through this module and nowhere else. It:

- refuses any URL whose scheme is not allowed (https only by default), that carries userinfo, or
  that has no host;
- resolves the host once, refuses the whole URL if ANY resolved address is refused (a hostname
  answering with one public and one private address is an attacker's rebinding setup), and connects
  to the exact address it checked (pinning), while TLS SNI, certificate verification and the
  ``Host`` header keep using the hostname;
- never follows redirects on its own; with ``max_redirects`` it follows at most that many hops by
  hand, each hop going through the same checks;
- always sets timeouts, ignores proxy/netrc environment variables (``trust_env=False``) but honours
  ``REQUESTS_CA_BUNDLE`` for verification, and caps the response body.

``settings.OUTBOUND_ALLOW_LOOPBACK`` (default False, read at every call) lets a local demo or a test
reach 127.0.0.0/8 and ::1, and nothing else.

requests-hardened provides the base session (redirects off, default timeout). Its IP filter is not
used: it checks only the first resolved address, lets ``::/96`` and 6to4/NAT64-embedded private
addresses through or refuses them wholesale, and resolves through a path tests cannot replace.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import os
import re
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from http.cookiejar import DefaultCookiePolicy
from typing import Any
from urllib.parse import SplitResult, urljoin, urlsplit

import anyio.to_thread
import certifi
import httpcore
import httpx
import requests
import urllib3
import urllib3.exceptions
from django.conf import settings
from requests.adapters import HTTPAdapter
from requests.structures import CaseInsensitiveDict
from requests.utils import requote_uri, rewind_body
from requests_hardened import Config, HTTPSession
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.util.connection import allowed_gai_family

from apps.core.numbers import parse_int

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_TIMEOUT",
    "HTTPS_ONLY",
    "GuardedAsyncHTTPXTransport",
    "GuardedHTTPXTransport",
    "GuardedResponse",
    "GuardedSession",
    "OutboundBlocked",
    "OutboundError",
    "address_refusal_reason",
    "check_url",
    "get_session",
    "guarded_async_httpx_client",
    "guarded_httpx_client",
    "is_address_allowed",
    "parse_ip_literal",
    "pin_address",
    "request",
    "resolve_host",
    "safe_url",
]

logger = logging.getLogger(__name__)

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

DEFAULT_TIMEOUT: tuple[float, float] = (3.05, 10)
DEFAULT_MAX_BYTES = 10 * 1024 * 1024
HTTPS_ONLY: frozenset[str] = frozenset({"https"})
_SUPPORTED_SCHEMES = frozenset({"http", "https"})
_DEFAULT_PORTS = {"http": 80, "https": 443}
_CHUNK_SIZE = 64 * 1024
_SENSITIVE_HEADERS = ("Authorization", "Proxy-Authorization", "Cookie")


class OutboundBlocked(Exception):
    """The URL or an address it resolves to is refused by policy. Nothing was sent."""

    def __init__(self, reason: str, *, url: str | None = None, address: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.url = url  # always safe_url(): no userinfo, query or fragment
        self.address = address

    def __str__(self) -> str:
        parts = [self.reason]
        if self.url:
            parts.append(self.url)
        if self.address:
            parts.append(f"address={self.address}")
        return " ".join(parts)


class OutboundError(Exception):
    """The call failed in transport: resolution, connection, TLS, timeout, size or redirect limit."""

    def __init__(self, reason: str, *, url: str | None = None, detail: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.url = url  # always safe_url(): no userinfo, query or fragment
        self.detail = detail

    def __str__(self) -> str:
        parts = [self.reason]
        if self.url:
            parts.append(self.url)
        if self.detail:
            parts.append(f"({self.detail})")
        return " ".join(parts)


def _log_blocked(exc: OutboundBlocked, url: str) -> None:
    if exc.url is None:
        exc.url = safe_url(url)
    logger.warning(
        "outbound blocked (%s): %s%s",
        exc.reason,
        exc.url,
        f" -> {exc.address}" if exc.address else "",
        extra={"outbound_reason": exc.reason, "outbound_url": exc.url, "outbound_address": exc.address},
    )


# --- address policy -------------------------------------------------------------------------------

_net = ipaddress.ip_network

# Order matters only for the reason reported: the first match names the refusal.
_REFUSED_V4: tuple[tuple[ipaddress.IPv4Network, str], ...] = (
    (_net("169.254.169.254/32"), "cloud_metadata"),
    (_net("100.100.100.200/32"), "cloud_metadata"),
    (_net("0.0.0.0/8"), "unspecified"),
    (_net("10.0.0.0/8"), "private"),
    (_net("100.64.0.0/10"), "cgnat"),
    (_net("127.0.0.0/8"), "loopback"),
    (_net("169.254.0.0/16"), "link_local"),
    (_net("172.16.0.0/12"), "private"),
    (_net("192.0.0.0/24"), "ietf_protocol"),
    (_net("192.0.2.0/24"), "documentation"),
    (_net("192.88.99.0/24"), "6to4_relay"),
    (_net("192.168.0.0/16"), "private"),
    (_net("198.18.0.0/15"), "benchmark"),
    (_net("198.51.100.0/24"), "documentation"),
    (_net("203.0.113.0/24"), "documentation"),
    (_net("224.0.0.0/4"), "multicast"),
    (_net("255.255.255.255/32"), "broadcast"),
    (_net("240.0.0.0/4"), "reserved"),
)

_REFUSED_V6: tuple[tuple[ipaddress.IPv6Network, str], ...] = (
    (_net("fd00:ec2::254/128"), "cloud_metadata"),
    (_net("::/128"), "unspecified"),
    (_net("::1/128"), "loopback"),
    (_net("::/96"), "ipv4_compatible"),
    (_net("::ffff:0:0:0/96"), "ipv4_translated"),
    (_net("64:ff9b:1::/48"), "nat64_local"),
    (_net("100::/64"), "discard"),
    (_net("2001::/32"), "teredo"),
    (_net("2001:db8::/32"), "documentation"),
    (_net("2001::/23"), "ietf_protocol"),
    (_net("3fff::/20"), "documentation"),
    (_net("5f00::/16"), "srv6"),
    (_net("fc00::/7"), "unique_local"),
    (_net("fe80::/10"), "link_local"),
    (_net("fec0::/10"), "site_local"),
    (_net("ff00::/8"), "multicast"),
)

_LOOPBACK_V4 = _net("127.0.0.0/8")
_LOOPBACK_V6 = ipaddress.IPv6Address("::1")
_NAT64_WELL_KNOWN = _net("64:ff9b::/96")
_GLOBAL_UNICAST_V6 = _net("2000::/3")


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> tuple[ipaddress.IPv4Address, str] | None:
    """The IPv4 address an IPv6 address really reaches, for the forms that carry one."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped, "ipv4_mapped"
    if ip in _NAT64_WELL_KNOWN:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF), "nat64"
    if ip.sixtofour is not None:
        return ip.sixtofour, "6to4"
    return None


def address_refusal_reason(ip: IPAddress | str, *, allow_loopback: bool) -> str | None:
    """Why `ip` may not be contacted, or None when it is a public unicast address.

    `allow_loopback` opens 127.0.0.0/8 and ::1 only. Addresses that merely embed a loopback IPv4
    (IPv4-mapped, NAT64, 6to4) stay refused: the switch is for a literal local receiver.
    """
    if isinstance(ip, str):
        ip = ipaddress.ip_address(ip)
    if ip.version == 6 and ip.scope_id:
        return "scoped_address"
    if ip in _LOOPBACK_V4 or ip == _LOOPBACK_V6:
        return None if allow_loopback else "loopback"
    if ip.version == 6:
        embedded = _embedded_ipv4(ip)
        if embedded is not None:
            v4, form = embedded
            inner = address_refusal_reason(v4, allow_loopback=False)
            return f"{form}:{inner}" if inner else None
        for network, reason in _REFUSED_V6:
            if ip in network:
                return reason
        if ip not in _GLOBAL_UNICAST_V6:
            return "not_global_unicast"
        if ip.is_site_local:
            return "site_local"
    else:
        for network, reason in _REFUSED_V4:
            if ip in network:
                return reason
    # Belt and braces: whatever the standard library knows to be special stays refused too.
    if ip.is_multicast:
        return "multicast"
    if ip.is_unspecified:
        return "unspecified"
    if ip.is_link_local:
        return "link_local"
    if ip.is_reserved:
        return "reserved"
    if ip.is_private or not ip.is_global:
        return "not_global"
    return None


def is_address_allowed(ip: IPAddress, *, allow_loopback: bool) -> bool:
    """True when `ip` is a public unicast address (or loopback with `allow_loopback`)."""
    return address_refusal_reason(ip, allow_loopback=allow_loopback) is None


# --- URLs, numeric hosts and resolution ----------------------------------------------------------

_LEGACY_IPV4_CHARS = re.compile(r"^[0-9][0-9a-fA-FxX.]*$")
_CONTROL_OR_SPACE = re.compile(r"[\x00-\x20\x7f]")


def safe_url(url: str) -> str:
    """scheme://host[:port]/path of `url`: no userinfo, query or fragment, fit for logs."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
    except ValueError:
        return "<invalid url>"
    if parts.scheme.lower() not in _SUPPORTED_SCHEMES:
        return f"{parts.scheme}:" if parts.scheme else "<relative url>"
    try:
        port = parts.port
    except ValueError:
        port = None
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{host}:{port}" if port is not None else host
    return f"{parts.scheme}://{netloc}{parts.path}"


def parse_ip_literal(host: str) -> IPAddress | None:
    """The address a numeric host means, in every form a resolver accepts; None for a name.

    Handles brackets, IPv6 and the legacy IPv4 spellings of inet_aton: decimal ``2130706433``,
    octal ``0177.0.0.1``, hex ``0x7f.0.0.1``, short ``127.1``, ``0``. Parsing here, not in the
    resolver, means a replaced resolver (tests) cannot be handed a numeric host to reinterpret.
    """
    host = host.strip()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if ":" in host:
        try:
            return ipaddress.IPv6Address(host)
        except ValueError:
            return None
    if host.endswith("."):
        host = host[:-1]
    if not _LEGACY_IPV4_CHARS.match(host):
        return None
    try:
        return ipaddress.IPv4Address(socket.inet_aton(host))
    except OSError:
        return None


def resolve_host(host: str, port: int) -> list[IPAddress]:
    """Every address `host` resolves to, in resolver order. Replaced in tests.

    Raises OutboundError("resolve_failed") when the name does not resolve.
    """
    family = allowed_gai_family()
    try:
        infos = socket.getaddrinfo(host, port, family, socket.SOCK_STREAM, 0, socket.AI_NUMERICHOST)
    except (socket.gaierror, UnicodeError):
        try:
            infos = socket.getaddrinfo(host, port, family, socket.SOCK_STREAM)
        except (socket.gaierror, UnicodeError) as exc:
            raise OutboundError("resolve_failed", detail=type(exc).__name__) from None
    addresses: list[IPAddress] = []
    for af, _type, _proto, _canon, sockaddr in infos:
        if af not in (socket.AF_INET, socket.AF_INET6):
            continue
        ip = ipaddress.ip_address(sockaddr[0])
        if ip not in addresses:
            addresses.append(ip)
    return addresses


def _allow_loopback() -> bool:
    if not settings.configured:
        return False
    # Only a real True opens loopback: a stray "0" string must not.
    return getattr(settings, "OUTBOUND_ALLOW_LOOPBACK", False) is True


def pin_address(host: str, port: int, *, allow_loopback: bool | None = None) -> IPAddress:
    """Resolve `host` once and return the address to connect to.

    SECURITY: every resolved address is checked and any refused one refuses the host, so a name
    answering with both a public and a private address cannot slip through. The caller must connect
    to the returned address and must not resolve `host` again.
    """
    if allow_loopback is None:
        allow_loopback = _allow_loopback()
    if not host:
        raise OutboundBlocked("missing_host")
    literal = parse_ip_literal(host)
    if literal is not None:
        candidates: list[Any] = [literal]
    else:
        try:
            candidates = list(resolve_host(host, port))
        except (OSError, UnicodeError) as exc:
            raise OutboundError("resolve_failed", detail=type(exc).__name__) from None
    if not candidates:
        raise OutboundError("resolve_failed", detail="no addresses")
    addresses: list[IPAddress] = []
    for candidate in candidates:
        try:
            ip = candidate if isinstance(candidate, IPAddress) else ipaddress.ip_address(str(candidate))
        except ValueError:
            raise OutboundBlocked("invalid_address", address=str(candidate)) from None
        reason = address_refusal_reason(ip, allow_loopback=allow_loopback)
        if reason is not None:
            raise OutboundBlocked("address_not_allowed", address=f"{ip} ({reason})")
        addresses.append(ip)
    return addresses[0]


def check_url(url: str, *, allowed_schemes: Iterable[str] = HTTPS_ONLY) -> SplitResult:
    """Refuse a URL on its shape alone, before anything is resolved.

    Raises OutboundBlocked with reason invalid_url, scheme_not_allowed, userinfo_not_allowed,
    missing_host or invalid_port.
    """
    if not isinstance(url, str) or _CONTROL_OR_SPACE.search(url):
        raise OutboundBlocked("invalid_url")
    try:
        parts = urlsplit(url)
    except ValueError:
        raise OutboundBlocked("invalid_url") from None
    safe = safe_url(url)
    allowed = {scheme.lower() for scheme in allowed_schemes} & _SUPPORTED_SCHEMES
    if parts.scheme.lower() not in allowed:
        raise OutboundBlocked("scheme_not_allowed", url=safe)
    if "\\" in parts.netloc:
        raise OutboundBlocked("invalid_url", url=safe)
    if "@" in parts.netloc:
        raise OutboundBlocked("userinfo_not_allowed", url=safe)
    if not parts.hostname:
        raise OutboundBlocked("missing_host", url=safe)
    try:
        parts.port  # noqa: B018 - evaluated for its ValueError on a bad port
    except ValueError:
        raise OutboundBlocked("invalid_port", url=safe) from None
    return parts


# --- requests: pinned adapter, session, response --------------------------------------------------


# --- overall deadline ---------------------------------------------------------------------------------
# Per-read timeouts do not bound a response that trickles one byte at a time. A call with a
# `deadline` registers the sockets it sends on (thread-local) and one watchdog thread per process
# shuts them down when the deadline passes; the blocked read then fails and the call raises
# "deadline_exceeded". Arming costs a dict insert: a thread per call (threading.Timer) cost a third
# of a pooled session's throughput. The watchdog looks every WATCHDOG_TICK seconds, so a deadline
# fires at most that late; it sleeps without waking while no call is armed.

_deadline_local = threading.local()
WATCHDOG_TICK = 0.05


class _Watched:
    def request(self, *args: Any, **kwargs: Any) -> Any:
        result = super().request(*args, **kwargs)  # connects first when the pooled connection is new
        sockets = getattr(_deadline_local, "sockets", None)
        if sockets is not None and self.sock is not None:
            sockets.append(self.sock)
        return result


class _WatchedHTTPConnection(_Watched, HTTPConnection):
    pass


class _WatchedHTTPSConnection(_Watched, HTTPSConnection):
    pass


class _WatchedHTTPConnectionPool(HTTPConnectionPool):
    ConnectionCls = _WatchedHTTPConnection


class _WatchedHTTPSConnectionPool(HTTPSConnectionPool):
    ConnectionCls = _WatchedHTTPSConnection


class _Watchdog:
    """One daemon thread per process (started again in a forked child) firing expired deadlines."""

    def __init__(self) -> None:
        self.armed: dict[int, _Deadline] = {}
        self.wake = threading.Event()
        self.lock = threading.Lock()
        self.pid = 0

    def arm(self, deadline: _Deadline) -> None:
        self.armed[id(deadline)] = deadline
        if self.pid != os.getpid():
            with self.lock:
                if self.pid != os.getpid():
                    self.wake = threading.Event()
                    threading.Thread(target=self._run, args=(self.wake,), name="outbound-deadline", daemon=True).start()
                    self.pid = os.getpid()
        if not self.wake.is_set():  # only on the idle -> busy edge: no lock taken per call otherwise
            self.wake.set()

    def disarm(self, deadline: _Deadline) -> None:
        self.armed.pop(id(deadline), None)

    def _run(self, wake: threading.Event) -> None:
        while True:
            wake.wait()
            while self.armed:
                time.sleep(WATCHDOG_TICK)
                now = time.monotonic()
                for deadline in list(self.armed.values()):
                    # Whoever pops the entry owns it: a call disarming at this moment is not fired.
                    if deadline.expires <= now and self.armed.pop(id(deadline), None) is not None:
                        deadline.fire()
            wake.clear()
            if self.armed:  # armed between the emptiness check and the clear
                wake.set()


_watchdog = _Watchdog()


class _Deadline:
    """Context manager arming the watchdog for the current thread's sends."""

    def __init__(self, seconds: float | None) -> None:
        self.seconds = seconds
        self.fired = False

    def __enter__(self) -> _Deadline:
        if self.seconds is None:
            return self
        self.sockets: list[socket.socket] = []
        _deadline_local.sockets = self.sockets
        self.expires = time.monotonic() + self.seconds
        _watchdog.arm(self)
        return self

    def fire(self) -> None:
        self.fired = True
        for sock in list(self.sockets):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def __exit__(self, *exc: Any) -> None:
        if self.seconds is None:
            return
        _watchdog.disarm(self)
        _deadline_local.sockets = None


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
    """A fully read, size-capped response."""

    __slots__ = ("content", "encoding", "headers", "status_code", "url")

    def __init__(
        self,
        *,
        status_code: int,
        headers: CaseInsensitiveDict[str],
        content: bytes,
        url: str,
        encoding: str | None = None,
    ) -> None:
        self.status_code = status_code
        self.headers = headers
        self.content = content
        self.url = url
        self.encoding = encoding

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


def _ca_bundle() -> str:
    return os.environ.get("REQUESTS_CA_BUNDLE") or certifi.where()


def _pool_manager() -> urllib3.PoolManager:
    """urllib3 pools for `send_bytes`, keyed by the checked address (and SNI name, CA bundle):
    the watched connection classes let the deadline watchdog reach their sockets."""
    manager = urllib3.PoolManager(num_pools=64)
    manager.pool_classes_by_scheme = {"http": _WatchedHTTPConnectionPool, "https": _WatchedHTTPSConnectionPool}
    return manager


def _urllib3_reason(exc: BaseException) -> str:
    if isinstance(exc, urllib3.exceptions.NewConnectionError):  # (a ConnectTimeoutError subclass in urllib3 2)
        return "connection_error"
    if isinstance(exc, urllib3.exceptions.TimeoutError | TimeoutError):
        return "timeout"
    if isinstance(exc, urllib3.exceptions.SSLError | ssl.SSLError):
        return "tls_error"
    if isinstance(exc, urllib3.exceptions.DecodeError):
        return "invalid_response"
    return "connection_error"


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
        self._pools = _pool_manager()

    def __enter__(self) -> GuardedSession:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        self._session.close()
        self._pools.clear()

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
        `deadline` (seconds) bounds the whole call, however slowly the peer trickles bytes.

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
        followed (a 3xx is the answer): the webhook engine's call, at about half the CPU of
        `request`. The same guard: url shape, every resolved address checked and the connection
        pinned to it (SNI, certificate and Host keep the hostname), verification on
        (REQUESTS_CA_BUNDLE honoured), timeouts, capped body, `deadline`, no cookies, no proxies.
        It runs on urllib3 pools keyed by the checked address, without requests' per-call
        preparation (hooks, cookie jars, environment merging, adapters)."""
        return self._watched(
            url, deadline, lambda: self._send_bytes(method, url, body, headers, timeout, max_bytes, allowed_schemes)
        )

    def _watched(self, url: str, deadline: float | None, call: Callable[[], GuardedResponse]) -> GuardedResponse:
        watchdog = _Deadline(deadline)
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

    def _send_bytes(
        self,
        method: str,
        url: str,
        body: bytes,
        headers: Mapping[str, str],
        timeout: float | tuple[float, float] | None,
        max_bytes: int,
        allowed_schemes: Iterable[str],
    ) -> GuardedResponse:
        parts = check_url(url, allowed_schemes=frozenset(allowed_schemes))
        safe = safe_url(url)
        scheme = parts.scheme.lower()
        port = parts.port or _DEFAULT_PORTS[scheme]
        ip, name, host_header = _pin_target(parts.hostname or "", scheme, parts.port)
        pool_kwargs: dict[str, Any] = {"maxsize": 1, "block": False, "retries": False}
        if scheme == "https":
            pool_kwargs.update(
                cert_reqs="CERT_REQUIRED", ca_certs=_ca_bundle(), server_hostname=name, assert_hostname=name
            )
        pool = self._pools.connection_from_host(str(ip), port, scheme, pool_kwargs=pool_kwargs)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        sent_headers = {**headers, "Host": host_header}
        connect, read = timeout if isinstance(timeout, tuple) else (timeout, timeout)
        response = None
        try:
            response = pool.urlopen(
                method.upper(),
                target,
                body=body,
                headers=sent_headers,
                redirect=False,
                retries=False,
                preload_content=False,
                assert_same_host=False,
                timeout=urllib3.Timeout(connect=connect, read=read),
            )
            _check_declared_length(response.headers, max_bytes, safe)
            content = _read_up_to(response.stream(min(_CHUNK_SIZE, max_bytes + 1)), max_bytes, safe)
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            if response is not None:
                response.close()
            error = OutboundError(_urllib3_reason(exc), url=safe, detail=type(exc).__name__)
            logger.info("outbound %s %s failed: %s", method.upper(), safe, error.reason)
            raise error from None
        except OutboundError:
            response.close()  # the rest of the body is never read: the connection is not reused
            raise
        response.release_conn()
        logger.debug("outbound %s %s -> %s", method.upper(), safe, response.status)
        return GuardedResponse(
            status_code=response.status, headers=CaseInsensitiveDict(response.headers), content=content, url=url
        )

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


def _pin_target(hostname: str, scheme: str, port: int | None) -> tuple[IPAddress, str, str]:
    """Resolve and check `hostname` (pin_address) and return the address to connect to, the name
    SNI and certificate matching must use, and the Host header."""
    default_port = _DEFAULT_PORTS[scheme]
    ip = pin_address(hostname, port or default_port)
    literal = parse_ip_literal(hostname)
    name = str(literal) if literal is not None else hostname
    host_header = f"[{name}]" if ":" in name else name
    if port is not None and port != default_port:
        host_header = f"{host_header}:{port}"
    return ip, name, host_header


def _check_declared_length(headers: Mapping[str, str], max_bytes: int, safe: str) -> None:
    declared = headers.get("Content-Length")
    try:
        too_large = declared is not None and parse_int(declared.strip()) > max_bytes
    except ValueError:
        too_large = False  # not a length (a client ignores it too); the read below stays capped
    if too_large:
        logger.info("outbound %s: declared body of %s bytes over %d", safe, declared, max_bytes)
        raise OutboundError("response_too_large", url=safe)


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


# --- httpx: transports for SDK-based provider calls -----------------------------------------------

DEFAULT_HTTPX_TIMEOUT = httpx.Timeout(DEFAULT_TIMEOUT[1], connect=DEFAULT_TIMEOUT[0])


def _ssl_context() -> ssl.SSLContext:
    bundle = os.environ.get("REQUESTS_CA_BUNDLE")
    if bundle and os.path.isdir(bundle):
        return ssl.create_default_context(capath=bundle)
    return ssl.create_default_context(cafile=bundle or certifi.where())


def _check_httpx_url(url: httpx.URL, allowed_schemes: frozenset[str]) -> None:
    safe = safe_url(str(url))
    if url.scheme.lower() not in allowed_schemes:
        raise OutboundBlocked("scheme_not_allowed", url=safe)
    if url.userinfo:
        raise OutboundBlocked("userinfo_not_allowed", url=safe)
    if not url.host:
        raise OutboundBlocked("missing_host", url=safe)


class _GuardedBackend(httpcore.NetworkBackend):
    """SECURITY: httpcore asks this backend for every TCP connection; it connects to the checked IP.

    httpcore keeps the hostname for SNI and certificate matching, and the Host header comes from the
    request, so only the socket address is pinned.
    """

    def __init__(self, inner: httpcore.NetworkBackend) -> None:
        self._inner = inner

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        ip = pin_address(host, port)
        return self._inner.connect_tcp(
            str(ip), port, timeout=timeout, local_address=local_address, socket_options=socket_options
        )

    def connect_unix_socket(self, *args: Any, **kwargs: Any) -> httpcore.NetworkStream:
        raise OutboundBlocked("unix_socket_not_allowed")

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


class _GuardedAsyncBackend(httpcore.AsyncNetworkBackend):
    """Async twin of _GuardedBackend; resolution runs in a worker thread."""

    def __init__(self, inner: httpcore.AsyncNetworkBackend) -> None:
        self._inner = inner

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        allow_loopback = _allow_loopback()
        ip = await anyio.to_thread.run_sync(lambda: pin_address(host, port, allow_loopback=allow_loopback))
        return await self._inner.connect_tcp(
            str(ip), port, timeout=timeout, local_address=local_address, socket_options=socket_options
        )

    async def connect_unix_socket(self, *args: Any, **kwargs: Any) -> httpcore.AsyncNetworkStream:
        raise OutboundBlocked("unix_socket_not_allowed")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


def _install_backend(pool: Any, wrap: type) -> None:
    # httpx builds its httpcore pool privately; if that ever changes, fail at construction rather
    # than run unguarded.
    inner = getattr(pool, "_network_backend", None)
    if not isinstance(pool, httpcore.ConnectionPool | httpcore.AsyncConnectionPool) or inner is None:
        raise RuntimeError("httpx/httpcore internals changed: the outbound guard cannot be installed")
    pool._network_backend = wrap(inner)  # noqa: SLF001


class _GuardedTransportSetup:
    """The construction both guarded httpx transports share: our TLS context, no environment, and
    the guarded network backend (`_backend`) installed in the private httpcore pool."""

    _backend: type

    def __init__(
        self,
        *,
        allowed_schemes: Iterable[str] = HTTPS_ONLY,
        cert: Any = None,
        http1: bool = True,
        http2: bool = False,
        limits: httpx.Limits = httpx.Limits(max_connections=100, max_keepalive_connections=20),  # noqa: B008
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


class GuardedHTTPXTransport(_GuardedTransportSetup, httpx.HTTPTransport):
    """httpx transport with the outbound guard, for SDKs that take an `http_client`.

    The URL is checked before sending, every new connection is resolved, checked and pinned, and a
    transport never follows redirects (a client told to follow them sends each hop through here).
    Proxies, unix sockets and environment settings are not available.
    """

    _backend = _GuardedBackend

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        try:
            _check_httpx_url(request.url, self._allowed_schemes)
            return super().handle_request(request)
        except OutboundBlocked as exc:
            _log_blocked(exc, str(request.url))
            raise


class GuardedAsyncHTTPXTransport(_GuardedTransportSetup, httpx.AsyncHTTPTransport):
    """Async twin of GuardedHTTPXTransport."""

    _backend = _GuardedAsyncBackend

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        try:
            _check_httpx_url(request.url, self._allowed_schemes)
            return await super().handle_async_request(request)
        except OutboundBlocked as exc:
            _log_blocked(exc, str(request.url))
            raise


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
