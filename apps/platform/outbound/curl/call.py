"""One request in flight: what libcurl's callbacks write into (`_Call`), the last check of the
socket it opens, and how the call settles (a response, or the error its libcurl code means)."""

from __future__ import annotations

import logging
import socket
import time
from collections import namedtuple
from collections.abc import Iterable
from concurrent.futures import Future
from typing import Any

import pycurl
from django.conf import settings
from requests.structures import CaseInsensitiveDict

from ..errors import OutboundBlocked, OutboundError
from ..policy import _check_declared_length, _log_blocked, is_address_allowed, parse_ip_literal

logger = logging.getLogger("apps.platform.outbound")

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
        "headers_done",
        "interim",
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
        self.headers_done = False  # a final (non-1xx) status line and all its headers have arrived
        self.interim = False  # the status line read last is a 1xx
        self.too_large = False
        self.refused = ""

    # --- libcurl callbacks (driver thread) ---

    def on_header(self, line: bytes) -> int | None:
        self.got_bytes = True
        self.last_activity = time.monotonic()
        text = line.decode("iso-8859-1").rstrip("\r\n")
        if text.startswith("HTTP/"):  # a new response (after a 1xx): its own headers
            self.headers = []
            self.headers_done = False
            status = text.split(" ", 2)[1:2]
            self.interim = bool(status) and status[0].startswith("1")
        elif ":" in text:
            name, value = text.split(":", 1)
            self.headers.append((name.strip(), value.strip()))
        elif not text:  # the end of the headers: the declared length is judged before any body
            self.headers_done = not self.interim
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


def _resolve(call: _Call, status: int, *, complete: bool = True) -> None:
    logger.debug("outbound %s %s -> %s", call.method, call.safe, status)
    from ..client import GuardedResponse

    response = GuardedResponse(
        status_code=status, headers=_merged(call.headers), content=bytes(call.body), url=call.url, complete=complete
    )
    call.future.set_result(response)


def _answered(call: _Call, code: int) -> bool:
    """Whether a call that ended in libcurl error `code` still has an answer: its final status line
    and every header arrived, and the error came while the body was read (the peer closed or reset
    the connection, a TLS peer closed without its close_notify, the body fell short of its declared
    length or could not be decoded). Many servers (Python's http.server, HTTP/1.0-style) end an
    answer by closing the connection, and libcurl on OpenSSL 3 reads the missing close_notify as a
    receive error; Python's ssl module (the requests path) reads it as the end of the body. The
    call's own limits are never waived: the deadline, the read timeout, the size cap, a refused
    socket."""
    if not call.headers_done or call.refused or call.too_large:
        return False
    return code not in (pycurl.E_OPERATION_TIMEDOUT, pycurl.E_FILESIZE_EXCEEDED)


def _ended_whole(call: _Call) -> bool:
    """Whether an answered call (`_answered`) has its whole body: one delimited by the connection's
    close (neither a length nor chunks), or as long as it said (bytes as sent, no Content-Encoding)."""
    headers = _merged(call.headers)
    declared = headers.get("Content-Length", "").strip()
    if "chunked" in headers.get("Transfer-Encoding", "").lower():
        return False
    if not declared:
        return True
    return declared.isdigit() and "Content-Encoding" not in headers and len(call.body) >= int(declared)


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
