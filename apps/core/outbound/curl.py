"""`GuardedSession.send_bytes` and `submit_bytes` on libcurl (pycurl): many small requests in
flight at once, driven by one thread per process, with the same guard as every other call of this
package.

Why libcurl: the webhook engine keeps 16 attempts in flight. On a Python event loop each attempt
costs the loop thread CPU with the interpreter lock held (request objects in Python, TLS through
Python's ssl objects), and the engine's other thread waits for that lock. libcurl builds the request,
does TLS and parses the answer in C with the lock released, so more requests fit in a process's CPU.

The guard, per call, before anything is sent:

- the URL's shape (`check_url`: scheme, userinfo, host, port); libcurl gets a URL rebuilt from the
  checked parts, with the normalised host (an odd numeric form is written as the address it means);
- the host resolved once (on a small resolver pool, so a slow DNS answer holds no other request;
  an address literal on the caller's thread), every address checked (`pin_address`), and the
  connection sent to that exact address whatever host libcurl reads in the URL (`CONNECT_TO` with
  an empty source matches every host); the socket libcurl opens is checked once more against that
  address before it connects (`_open_socket`), so no parser difference can reach another address.
  libcurl reuses a pooled connection only for the same connect-to address and the same host name;
- TLS verification on (`REQUESTS_CA_BUNDLE` honoured, else certifi's bundle, no other CA path); SNI,
  certificate matching and `Host` keep the hostname;
- no redirect followed (a 3xx is the answer), no cookies, no proxy (the environment's variables are
  overridden), no netrc, HTTP and HTTPS only;
- a connect timeout, a read timeout (no byte for that long once the request is sent: enforced by the
  driver), the body capped at `max_bytes` (declared, or streamed and counted after libcurl has undone
  its Content-Encoding: a gzip bomb stops at the cap), and a deadline over the whole call
  (libcurl's own `TIMEOUT_MS`: `deadline_exceeded`), however slowly the peer trickles bytes.

Each `GuardedSession` has its own libcurl multi handle (its own pooled connections), closed with it.
The driver thread starts on first use and again in a forked child (Celery's prefork pool); it sleeps
in epoll while nothing is in flight.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import logging
import math
import os
import re
import selectors
import socket
import threading
import time
import weakref
from collections import namedtuple
from collections.abc import Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from queue import Empty, SimpleQueue
from typing import Any, NamedTuple

import certifi
import pycurl
from django.conf import settings
from requests.structures import CaseInsensitiveDict

from .errors import OutboundBlocked, OutboundError
from .policy import (
    _DEFAULT_PORTS,
    CACHED,
    _check_declared_length,
    _log_blocked,
    _pin_target,
    check_url,
    is_address_allowed,
    parse_ip_literal,
    safe_url,
)

logger = logging.getLogger("apps.core.outbound")

# Upper bound of one session's open connections (its callers bound what they keep in flight).
CONNECTIONS = 100
RESOLVERS = 4

_TLS_ERRORS = frozenset(
    code
    for code in (
        pycurl.E_SSL_CONNECT_ERROR,
        pycurl.E_PEER_FAILED_VERIFICATION,
        getattr(pycurl, "E_SSL_CERTPROBLEM", 58),
        getattr(pycurl, "E_SSL_CIPHER", 59),
        getattr(pycurl, "E_SSL_CACERT_BADFILE", 77),
        getattr(pycurl, "E_SSL_SHUTDOWN_FAILED", 80),
        getattr(pycurl, "E_SSL_ISSUER_ERROR", 83),
        getattr(pycurl, "E_SSL_PINNEDPUBKEYNOTMATCH", 90),
        getattr(pycurl, "E_SSL_INVALIDCERTSTATUS", 91),
    )
)
_INVALID_RESPONSE = frozenset(
    (
        pycurl.E_PARTIAL_FILE,
        8,  # CURLE_WEIRD_SERVER_REPLY
        getattr(pycurl, "E_BAD_CONTENT_ENCODING", 61),
        getattr(pycurl, "E_HTTP2", 16),
        getattr(pycurl, "E_HTTP2_STREAM", 92),
    )
)


# What libcurl's open-socket callback is given (pycurl's CurlSockAddr), for tests that offer one.
pycurl_address = namedtuple("pycurl_address", "family socktype protocol addr")


def _open_socket(family: int, socktype: int, protocol: int, address: tuple) -> socket.socket:
    """The socket libcurl connects to `address` (checked already; a function of its own, so tests
    can watch every connection)."""
    return socket.socket(family, socktype, protocol)


def _ca_bundle() -> str:
    return os.environ.get("REQUESTS_CA_BUNDLE") or certifi.where()


class _Call:
    """One request in the driver: its libcurl handle's callbacks write here."""

    __slots__ = (
        "address",
        "body",
        "check_at",
        "deadline_at",
        "future",
        "got_bytes",
        "handle",
        "headers",
        "last_activity",
        "max_bytes",
        "method",
        "read",
        "refused",
        "safe",
        "started",
        "too_large",
        "url",
    )

    def __init__(self, *, url: str, safe: str, method: str, max_bytes: int, read: float, deadline_at: float) -> None:
        self.url, self.safe, self.method = url, safe, method
        self.max_bytes, self.read, self.deadline_at = max_bytes, read, deadline_at
        self.future: Future = Future()
        self.handle: pycurl.Curl | None = None
        self.address: tuple[str, int] | None = None  # the checked address this call may connect to
        self.body = bytearray()
        self.headers: list[tuple[str, str]] = []
        self.started = time.monotonic()
        self.last_activity = self.started
        self.check_at = self.started + read  # the read timeout is not looked at before this
        self.got_bytes = False
        self.too_large = False
        self.refused = ""

    # --- libcurl callbacks (driver thread) ---

    def on_header(self, line: bytes) -> int | None:
        self.got_bytes = True
        self.last_activity = time.monotonic()
        text = line.decode("iso-8859-1").rstrip("\r\n")
        if text.startswith("HTTP/"):  # a new response (after a 1xx): its own headers
            self.headers = []
        elif ":" in text:
            name, value = text.split(":", 1)
            self.headers.append((name.strip(), value.strip()))
        elif not text:  # the end of the headers: the declared length is judged before any body
            declared = [value for name, value in self.headers if name.lower() == "content-length"]
            try:
                _check_declared_length(
                    {"Content-Length": ", ".join(declared)} if declared else {}, self.max_bytes, self.safe
                )
            except OutboundError:
                self.too_large = True
                return 0
        return None

    def on_body(self, chunk: bytes) -> int | None:
        self.last_activity = time.monotonic()
        self.body += chunk
        if len(self.body) > self.max_bytes:
            logger.info("outbound %s: body over %d bytes", self.safe, self.max_bytes)
            self.too_large = True
            return 0  # libcurl stops the transfer (the connection is not reused)
        return None

    def on_open_socket(self, purpose: int, address: Any) -> socket.socket | None:
        # SECURITY: the last gate: libcurl may connect only to the address the guard checked.
        host, port = address.addr[0], address.addr[1]
        literal = parse_ip_literal(host)
        if (
            self.address is None
            or literal is None
            or (str(literal), port) != self.address
            or not is_address_allowed(literal, allow_loopback=getattr(settings, "OUTBOUND_ALLOW_LOOPBACK", False))
        ):
            self.refused = "address_not_allowed"
            return None
        return _open_socket(address.family, address.socktype, address.protocol, address.addr)


def _merged(pairs: Iterable[tuple[str, str]]) -> CaseInsensitiveDict[str]:
    merged: CaseInsensitiveDict[str] = CaseInsensitiveDict()
    for key, value in pairs:  # repeated fields joined, as urllib3 joins them
        merged[key] = f"{merged[key]}, {value}" if key in merged else value
    return merged


class _Pool:
    """One transport's libcurl multi handle (its connection cache) and its calls in flight."""

    def __init__(self, driver: _Driver) -> None:
        self.driver = driver
        self.multi = pycurl.CurlMulti()
        self.multi.setopt(pycurl.M_MAXCONNECTS, CONNECTIONS)
        self.multi.setopt(pycurl.M_MAX_TOTAL_CONNECTIONS, CONNECTIONS)
        self.multi.setopt(pycurl.M_SOCKETFUNCTION, self._on_socket)
        self.multi.setopt(pycurl.M_TIMERFUNCTION, self._on_timer)
        self.timer_at: float | None = None
        self.calls: dict[pycurl.Curl, _Call] = {}
        self.free: list[pycurl.Curl] = []
        self.closed = False

    def _on_socket(self, what: int, fd: int, multi: Any, data: Any) -> None:
        self.driver.watch(self, fd, what)

    def _on_timer(self, timeout_ms: int) -> None:
        self.timer_at = None if timeout_ms < 0 else time.monotonic() + timeout_ms / 1000

    def start(self, call: _Call, body: bytes, headers: list[str], connect: float) -> None:
        handle = self.free.pop() if self.free else pycurl.Curl()
        remaining = call.deadline_at - time.monotonic()
        if remaining <= 0:
            self.free.append(handle)
            call.future.set_exception(OutboundError("deadline_exceeded", url=call.safe))
            return
        assert call.address is not None
        ip, port = call.address
        # libcurl's timings (PRETRANSFER_TIME) count from here, not from the submit (a name's
        # resolution came between)
        call.started = call.last_activity = time.monotonic()
        call.check_at = call.started + call.read
        handle.setopt(pycurl.URL, call.url)
        # every host of this handle connects to the checked address (an empty source matches all)
        handle.setopt(pycurl.CONNECT_TO, [f"::{'[' + ip + ']' if ':' in ip else ip}:{port}"])
        handle.setopt(pycurl.OPENSOCKETFUNCTION, call.on_open_socket)
        handle.setopt(pycurl.PROTOCOLS, pycurl.PROTO_HTTP | pycurl.PROTO_HTTPS)
        handle.setopt(pycurl.HTTP_VERSION, pycurl.CURL_HTTP_VERSION_1_1)
        handle.setopt(pycurl.PROXY, "")  # no proxy, whatever the environment says
        handle.setopt(pycurl.NOPROXY, "*")
        handle.setopt(pycurl.CAINFO, _ca_bundle())
        handle.setopt(pycurl.CAPATH, None)
        handle.setopt(pycurl.NOSIGNAL, 1)
        handle.setopt(pycurl.CONNECTTIMEOUT_MS, max(1, int(connect * 1000)))
        handle.setopt(pycurl.TIMEOUT_MS, max(1, math.ceil(remaining * 1000)))
        handle.setopt(pycurl.HTTPHEADER, headers)
        # libcurl undoes any Content-Encoding it knows (gzip, deflate, br) piece by piece before the
        # body callback, so `max_bytes` counts decoded bytes and a bomb stops at the cap. The request
        # still asks for identity (the Accept-Encoding line of `_header_lines` wins over libcurl's).
        handle.setopt(pycurl.ACCEPT_ENCODING, "")
        handle.setopt(pycurl.HEADERFUNCTION, call.on_header)
        handle.setopt(pycurl.WRITEFUNCTION, call.on_body)
        if call.method == "GET" and not body:
            handle.setopt(pycurl.HTTPGET, 1)
        elif call.method == "HEAD":
            handle.setopt(pycurl.NOBODY, 1)
        else:
            handle.setopt(pycurl.POSTFIELDS, body)
            if call.method != "POST":
                handle.setopt(pycurl.CUSTOMREQUEST, call.method)
        call.handle = handle
        self.calls[handle] = call
        self.multi.add_handle(handle)

    def finish(self) -> None:
        """Settle every call libcurl has finished."""
        while True:
            queued, succeeded, failed = self.multi.info_read()
            for handle in succeeded:
                self._settle(handle, 0)
            for handle, code, _message in failed:
                self._settle(handle, code)
            if not queued:
                return

    def _settle(self, handle: pycurl.Curl, code: int) -> None:
        call = self.calls.pop(handle)
        status = handle.getinfo(pycurl.RESPONSE_CODE) if code == 0 else 0
        self.multi.remove_handle(handle)
        handle.reset()
        self.free.append(handle)
        call.handle = None
        if code == 0:
            _resolve(call, status)
        else:
            _reject(call, _error_of(call, code))

    def abort(self, handle: pycurl.Curl, error: OutboundError) -> None:
        """Stop a call (libcurl drops its connection) and fail it."""
        call = self.calls.pop(handle)
        self.multi.remove_handle(handle)
        handle.reset()
        self.free.append(handle)
        call.handle = None
        _reject(call, error)

    def next_check(self) -> float | None:
        """When a call in flight may next pass its read timeout (monotonic)."""
        return min((call.check_at for call in self.calls.values()), default=None)

    def expire_idle(self, now: float, readable: dict[int, float]) -> None:
        """Fail the calls that waited `read` seconds for a byte since their request was sent (or
        since their last byte). `readable` is when each socket last had bytes to read: a peer that
        trickles a header line keeps its call alive, as a socket read timeout would."""
        for handle, call in list(self.calls.items()):
            if call.check_at > now:
                continue
            if call.got_bytes:
                idle_since = call.last_activity
            else:
                sent = handle.getinfo(pycurl.PRETRANSFER_TIME)  # 0 while still connecting
                if not sent:
                    call.check_at = now + min(call.read, 0.1)  # the connect timeout governs this part
                    continue
                idle_since = call.started + sent
            idle_since = max(idle_since, readable.get(handle.getinfo(pycurl.ACTIVESOCKET), 0.0))
            if now - idle_since >= call.read:
                self.abort(handle, OutboundError("timeout", url=call.safe))
            else:
                call.check_at = idle_since + call.read

    def close(self) -> None:
        for handle in list(self.calls):
            self.abort(handle, OutboundError("connection_error", url=self.calls[handle].safe, detail="closed"))
        self.closed = True
        self.multi.close()
        for handle in self.free:
            handle.close()
        self.free.clear()


def _resolve(call: _Call, status: int) -> None:
    logger.debug("outbound %s %s -> %s", call.method, call.safe, status)
    from .client import GuardedResponse

    response = GuardedResponse(
        status_code=status, headers=_merged(call.headers), content=bytes(call.body), url=call.url
    )
    call.future.set_result(response)


def _reject(call: _Call, error: OutboundError | OutboundBlocked) -> None:
    if isinstance(error, OutboundBlocked):
        _log_blocked(error, call.url)
    else:
        logger.info("outbound %s %s failed: %s", call.method, call.safe, error.reason)
    call.future.set_exception(error)


def _error_of(call: _Call, code: int) -> OutboundError | OutboundBlocked:
    if call.refused:
        return OutboundBlocked(call.refused, url=call.safe)
    if call.too_large or code == pycurl.E_FILESIZE_EXCEEDED:
        return OutboundError("response_too_large", url=call.safe)
    if code == pycurl.E_OPERATION_TIMEDOUT:
        # the whole-call deadline (TIMEOUT_MS) or the connect timeout
        expired = time.monotonic() >= call.deadline_at - 0.01
        return OutboundError("deadline_exceeded" if expired else "timeout", url=call.safe)
    if code == pycurl.E_URL_MALFORMAT:
        return OutboundBlocked("invalid_url", url=call.safe)
    detail = f"curl_{code}"
    if code in _TLS_ERRORS:
        return OutboundError("tls_error", url=call.safe, detail=detail)
    if code in _INVALID_RESPONSE:
        return OutboundError("invalid_response", url=call.safe, detail=detail)
    return OutboundError("connection_error", url=call.safe, detail=detail)


class _Driver:
    """The process's outbound thread: runs every pool's transfers (libcurl's socket interface on one
    epoll selector). Other threads talk to it through `post` only."""

    def __init__(self) -> None:
        self.commands: SimpleQueue = SimpleQueue()
        self.selector = selectors.DefaultSelector()
        self.wake_r, self.wake_w = socket.socketpair()
        self.wake_r.setblocking(False)
        self.wake_w.setblocking(False)
        self.selector.register(self.wake_r, selectors.EVENT_READ, None)
        self.pools: set[_Pool] = set()
        self.waiting = False  # in select: a new command must wake it
        self.readable: dict[int, float] = {}  # descriptor -> when it last had bytes to read
        self.resolver = ThreadPoolExecutor(max_workers=RESOLVERS, thread_name_prefix="outbound-resolve")
        self.thread = threading.Thread(target=self._run, name="outbound-curl", daemon=True)
        self.thread.start()

    def post(self, command: tuple) -> None:
        self.commands.put(command)
        # Woken only while it waits in select: an awake driver drains the queue before it waits
        # again (it raises `waiting` first, then looks at the queue, so no command is left behind).
        if self.waiting:
            self.waiting = False  # one byte wakes it: the calls posted until it runs need none
            with contextlib.suppress(BlockingIOError):  # a full wake-up buffer already wakes it
                self.wake_w.send(b"\0")

    def watch(self, pool: _Pool, fd: int, what: int) -> None:
        """libcurl's socket callback: follow `fd` for what it waits on (or stop following it)."""
        if what == pycurl.POLL_REMOVE:
            self.readable.pop(fd, None)
            with contextlib.suppress(KeyError, ValueError, OSError):
                self.selector.unregister(fd)
            return
        events = 0
        if what & pycurl.POLL_IN:
            events |= selectors.EVENT_READ
        if what & pycurl.POLL_OUT:
            events |= selectors.EVENT_WRITE
        try:
            self.selector.modify(fd, events, pool)
        except KeyError:
            self.selector.register(fd, events, pool)
        except (ValueError, OSError):  # a reused descriptor number the selector still knew
            with contextlib.suppress(KeyError, ValueError, OSError):
                self.selector.unregister(fd)
            self.selector.register(fd, events, pool)

    def _run(self) -> None:
        while True:
            try:
                self._step()
            except Exception:  # never let the driver die: every caller would wait forever
                logger.exception("outbound driver step failed")

    def _step(self) -> None:
        self._drain()
        timeout = self._timeout()
        self.waiting = True
        if not self.commands.empty():  # posted after the drain, before `waiting` was raised
            timeout = 0
        ready = self.selector.select(timeout)
        self.waiting = False
        now = time.monotonic()
        for key, mask in ready:
            pool = key.data
            if pool is None:
                with contextlib.suppress(BlockingIOError):
                    while self.wake_r.recv(4096):
                        pass
                continue
            if pool.closed:
                continue
            action = 0
            if mask & selectors.EVENT_READ:
                action |= pycurl.CSELECT_IN
                self.readable[key.fd] = now
            if mask & selectors.EVENT_WRITE:
                action |= pycurl.CSELECT_OUT
            pool.multi.socket_action(key.fd, action)
        now = time.monotonic()
        for pool in list(self.pools):
            if pool.timer_at is not None and pool.timer_at <= now:
                pool.timer_at = None
                pool.multi.socket_action(pycurl.SOCKET_TIMEOUT, 0)
            pool.finish()
            if pool.calls:
                check = pool.next_check()
                if check is not None and check <= now:
                    pool.expire_idle(now, self.readable)

    def _timeout(self) -> float | None:
        soonest = None
        for pool in self.pools:
            for at in (pool.timer_at, pool.next_check() if pool.calls else None):
                if at is not None and (soonest is None or at < soonest):
                    soonest = at
        if soonest is None:
            return None  # nothing in flight: sleep until a command comes
        return max(0.0, soonest - time.monotonic())

    def _drain(self) -> None:
        while True:
            try:
                command = self.commands.get_nowait()
            except Empty:
                return
            kind, pool = command[0], command[1]
            if kind == "start":
                if pool.closed:
                    _reject(command[2], OutboundError("connection_error", url=command[2].safe, detail="closed"))
                    continue
                self.pools.add(pool)
                try:
                    pool.start(*command[2:])
                except Exception as exc:  # a bad option value: this call fails, nothing else does
                    call = command[2]
                    pool.calls.pop(call.handle, None)
                    _reject(call, OutboundError("request_failed", url=call.safe, detail=type(exc).__name__))
                    continue
            elif kind == "close":
                if not pool.closed:
                    pool.close()
                self.pools.discard(pool)
                command[2].set()


# This process's id, set again in a forked child: read on every call, where os.getpid() (a system
# call) was a visible part of a webhook attempt's cost on the outbound thread.
_process = [os.getpid()]
os.register_at_fork(after_in_child=lambda: _process.__setitem__(0, os.getpid()))


def _pid() -> int:
    return _process[0]


class _DriverHolder:
    """One driver per process (started again after a fork)."""

    def __init__(self) -> None:
        self.driver: _Driver | None = None
        self.pid = 0
        self.lock = threading.Lock()

    def get(self) -> _Driver:
        if self.pid != _pid():
            with self.lock:
                if self.pid != _pid():
                    self.driver, self.pid = _Driver(), _pid()
        assert self.driver is not None
        return self.driver


_driver = _DriverHolder()
_open_transports: weakref.WeakSet[CurlTransport] = weakref.WeakSet()


@atexit.register
def _close_open_transports() -> None:
    for transport in list(_open_transports):
        with contextlib.suppress(Exception):  # the process is exiting: nothing left to tell
            transport.close()


class CurlTransport:
    """One guarded session's libcurl side: its connections, used on the driver thread. Closed with
    its session; one dropped unclosed is closed when collected, and every one still open when the
    process exits."""

    def __init__(self) -> None:
        self._pool: _Pool | None = None
        self._pid = 0
        _open_transports.add(self)

    def __del__(self) -> None:
        pool = self._pool
        if pool is not None and self._pid == _pid() and _driver.pid == _pid():
            with contextlib.suppress(Exception):
                _driver.get().post(("close", pool, threading.Event()))

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
        """Start one call; the future gives its GuardedResponse or raises OutboundBlocked /
        OutboundError."""
        seconds = deadline if deadline is not None else settings.OUTBOUND_DEADLINE_SECONDS
        safe = safe_url(url)
        method = method.upper()
        connect, read = timeout if isinstance(timeout, tuple) else (timeout, timeout)
        call = _Call(
            url=url,
            safe=safe,
            method=method,
            max_bytes=max_bytes,
            read=read or 10.0,
            deadline_at=time.monotonic() + seconds,
        )
        driver = _driver.get()
        pool = self._current_pool(driver)
        try:
            target = _target(url, frozenset(allowed_schemes))
        except OutboundBlocked as exc:
            _reject(call, exc)
            return call.future
        try:
            lines = _header_lines(headers)
        except ValueError as exc:
            call.future.set_exception(exc)
            return call.future
        args = (call, target, body, lines, connect or 3.05)
        if not target.literal:  # a name: resolved off the caller's thread
            driver.resolver.submit(self._pin_and_start, driver, pool, *args)
        else:
            self._pin_and_start(driver, pool, *args)
        return call.future

    def _pin_and_start(
        self, driver: _Driver, pool: _Pool, call: _Call, target: _Target, body: bytes, lines: list[str], connect: float
    ) -> None:
        try:
            ip, name, host_header = _pin_target(target.hostname, target.scheme, target.port)
        except (OutboundBlocked, OutboundError) as exc:
            _reject(call, exc)
            return
        call.address = (str(ip), target.default_port)
        host = f"[{name}]" if ":" in name else name
        call.url = f"{target.scheme}://{host}:{target.default_port}{target.path}"
        driver.post(("start", pool, call, body, [f"Host: {host_header}", *lines], connect))

    def close(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None and self._pid == _pid():
            done = threading.Event()
            _driver.get().post(("close", pool, done))
            done.wait(timeout=10)

    def _current_pool(self, driver: _Driver) -> _Pool:
        if self._pool is None or self._pid != _pid():  # a forked child opens its own
            self._pool = _Pool(driver)
            self._pid = _pid()
        return self._pool


class _Target(NamedTuple):
    """What a URL that passed `check_url` says, its port filled in: a pure function of the URL."""

    scheme: str
    hostname: str
    port: int | None  # as written
    default_port: int  # as written, else the scheme's
    path: str  # path (at least /) and query
    literal: bool  # the host is a numeric address (nothing to resolve)


@functools.lru_cache(maxsize=CACHED)
def _target(url: str, allowed_schemes: frozenset[str]) -> _Target:
    """`check_url` and the parts of the URL the call needs, once per URL (a refusal is raised, never
    cached): the parse was a tenth of a webhook attempt's cost on the outbound thread."""
    parts = check_url(url, allowed_schemes=allowed_schemes)
    scheme, hostname, port = parts.scheme.lower(), parts.hostname or "", parts.port
    query = f"?{parts.query}" if parts.query else ""
    return _Target(
        scheme=scheme,
        hostname=hostname,
        port=port,
        default_port=port or _DEFAULT_PORTS[scheme],
        path=f"{parts.path or '/'}{query}",
        literal=parse_ip_literal(hostname) is not None,
    )


_LINE_BREAK = re.compile(r"[\r\n\0]")


def _header_lines(headers: Mapping[str, str]) -> list[str]:
    """The caller's headers as libcurl takes them; libcurl adds none of its own that we do not want
    (no form Content-Type, no `Expect: 100-continue`, no compression)."""
    lines = []
    names = set()
    for name, value in headers.items():
        if ":" in name or _LINE_BREAK.search(f"{name}{value}"):
            raise ValueError(f"header {name!r}: a name or value with a line break, NUL or colon")
        if name.lower() == "host":
            continue  # the guard's Host, from the checked URL
        names.add(name.lower())
        lines.append(f"{name}: {value}")
    if "content-type" not in names:
        lines.append("Content-Type:")  # libcurl would add application/x-www-form-urlencoded
    if "accept-encoding" not in names:
        lines.append("Accept-Encoding: identity")
    lines.append("Expect:")
    return lines
