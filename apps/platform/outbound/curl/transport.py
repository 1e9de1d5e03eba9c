"""`CurlTransport`: one guarded session's side of the driver, and what a call is built from (the
checked URL's parts, the header lines)."""

from __future__ import annotations

import atexit
import contextlib
import functools
import re
import threading
import time
import weakref
from collections.abc import Iterable, Mapping
from concurrent.futures import Future
from typing import TYPE_CHECKING, NamedTuple

import idna
from django.conf import settings
from requests.utils import requote_uri

from ..errors import OutboundBlocked, OutboundError
from ..policy import _DEFAULT_PORTS, CACHED, _pin_target, check_url, parse_ip_literal, safe_url
from .call import _Call, _reject
from .driver import _driver, _pid
from .pool import _Pool

if TYPE_CHECKING:
    from .driver import _Driver

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
    scheme, hostname, port = parts.scheme.lower(), _ascii_host(parts.hostname or "", url), parts.port
    query = f"?{parts.query}" if parts.query else ""
    return _Target(
        scheme=scheme,
        hostname=hostname,
        port=port,
        default_port=port or _DEFAULT_PORTS[scheme],
        # percent-encoded as requests sends it: libcurl's URL option is ASCII
        path=requote_uri(f"{parts.path or '/'}{query}"),
        literal=parse_ip_literal(hostname) is not None,
    )


def _ascii_host(host: str, url: str) -> str:
    """The host as libcurl takes it (its URL option is ASCII): an internationalised name in its
    IDNA form, as requests sends it, so it is resolved, checked, named in SNI and Host that way."""
    if host.isascii():
        return host
    try:
        return idna.encode(host, uts46=True).decode("ascii")
    except idna.IDNAError:
        raise OutboundBlocked("invalid_url", url=safe_url(url)) from None


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
