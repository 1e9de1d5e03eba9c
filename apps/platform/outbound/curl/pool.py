"""A transport's libcurl multi handle: how a call's handle is set up, settled and timed out."""

from __future__ import annotations

import logging
import math
import os
import time
from typing import TYPE_CHECKING, Any

import certifi
import pycurl

from ..errors import OutboundError
from .call import _answered, _Call, _ended_whole, _error_of, _reject, _resolve

if TYPE_CHECKING:
    from .driver import _Driver

logger = logging.getLogger("apps.platform.outbound")

# Upper bound of one session's open connections (its callers bound what they keep in flight).
CONNECTIONS = 100


def _ca_bundle() -> str:
    return os.environ.get("REQUESTS_CA_BUNDLE") or certifi.where()


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
        status = handle.getinfo(pycurl.RESPONSE_CODE)
        self.multi.remove_handle(handle)
        handle.reset()
        self.free.append(handle)
        call.handle = None
        if code == 0:
            _resolve(call, status)
        elif _answered(call, code):  # the connection ended after the status line and headers
            whole = _ended_whole(call)
            if not whole:
                logger.info("outbound %s %s -> %s, body cut short (curl_%s)", call.method, call.safe, status, code)
            _resolve(call, status, complete=whole)
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
