"""The guarded outbound client: address policy, hostile URLs, pinning, redirects, limits, httpx.

Real traffic only goes to a TLS server on loopback with its own CA (REQUESTS_CA_BUNDLE); hostile
cases run with a mocked resolver and with sockets forbidden.
"""

from __future__ import annotations

import asyncio
import functools
import gzip
import ipaddress
import json
import logging
import socket
import ssl
import threading
import time
import tracemalloc
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
import requests
import trustme

from apps.platform import outbound
from apps.platform.outbound import (
    GuardedSession,
    OutboundBlocked,
    OutboundError,
    guarded_async_httpx_client,
    guarded_httpx_client,
    is_address_allowed,
)
from tests.core import bombs
from tests.platform.hostile_addresses import HOSTILE_CASES, PUBLIC_V4, HostileCase

ip = ipaddress.ip_address
IDN = "пример.рф"
IDN_ASCII = "xn--e1afmkfd.xn--p1ai"


# --- fixtures -------------------------------------------------------------------------------------


@dataclass
class FakeResolver:
    """Stands in for DNS: names in `table` resolve as listed, any other name to a public IP.

    With `strict` (live-server tests, where sockets are real) an unknown name does not resolve, so a
    bug can never send a test to the internet.
    """

    table: dict[str, list[str]] = field(default_factory=dict)
    calls: list[str] = field(default_factory=list)
    strict: bool = False

    def __call__(self, host: str, port: int) -> list[ipaddress.IPv4Address | ipaddress.IPv6Address]:
        self.calls.append(host)
        if host not in self.table and self.strict:
            raise OutboundError("resolve_failed")
        return [ip(address) for address in self.table.get(host, [PUBLIC_V4])]


@pytest.fixture
def resolver(monkeypatch: pytest.MonkeyPatch) -> FakeResolver:
    fake = FakeResolver()
    monkeypatch.setattr(outbound.policy, "resolve_host", fake)
    return fake


@pytest.fixture
def no_sockets(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Fail any attempt to open a connection; the returned list records the attempts."""
    attempts: list[object] = []

    def refuse(*args: object, **kwargs: object) -> None:
        attempts.append(args)
        raise AssertionError(f"a socket was opened: {args!r}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(outbound.curl.call, "_open_socket", refuse)  # libcurl's sockets
    return attempts


@pytest.fixture
def connect_spy(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record the address of every connection; let loopback ones through, fail any other."""
    seen: list[str] = []
    original = socket.socket.connect

    def spy(sock: socket.socket, address: tuple) -> None:
        seen.append(address[0])
        if address[0] not in ("127.0.0.1", "::1"):
            raise AssertionError(f"connection to a non-loopback address: {address!r}")
        return original(sock, address)

    monkeypatch.setattr(socket.socket, "connect", spy)
    # libcurl (send_bytes, submit_bytes) connects in C: its sockets are watched where they are opened
    open_socket = outbound.curl.call._open_socket

    def open_spy(family: int, socktype: int, protocol: int, address: tuple) -> socket.socket:
        seen.append(address[0])
        if address[0] not in ("127.0.0.1", "::1"):
            raise AssertionError(f"connection to a non-loopback address: {address!r}")
        return open_socket(family, socktype, protocol, address)

    monkeypatch.setattr(outbound.curl.call, "_open_socket", open_spy)
    return seen


@dataclass
class TLSServer:
    port: int
    ca_path: Path
    sni_names: list[str] = field(default_factory=list)
    connections: list[int] = field(default_factory=list)
    # /together answers only once this many requests wait at once (each waits at most 5 s)
    together: threading.Barrier | None = None

    def url(self, path: str, host: str = "localhost") -> str:
        return f"https://{host}:{self.port}{path}"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 5

    def setup(self) -> None:
        super().setup()
        self.server.tls.connections.append(1)  # type: ignore[attr-defined]

    def log_message(self, format: str, *args: object) -> None:
        pass

    def _reply(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        query = {key: values[0] for key, values in parse_qs(parts.query).items()}
        if parts.path == "/ok":
            self._reply(200, b"hello outbound", {"Content-Type": "text/plain"})
        elif parts.path == "/json":
            self._reply(200, json.dumps({"ok": True}).encode(), {"Content-Type": "application/json"})
        elif parts.path == "/echo-host":
            self._reply(200, self.headers["Host"].encode())
        elif parts.path.startswith("/echo-path"):
            self._reply(200, self.path.encode())
        elif parts.path == "/echo-auth":
            self._reply(200, (self.headers.get("Authorization") or "").encode())
        elif parts.path == "/big":
            self._reply(200, b"x" * int(query["n"]))
        elif parts.path == "/declared":
            # Announces a huge body, sends one byte: only the announcement can be judged.
            self.send_response(200)
            self.send_header("Content-Length", query["n"])
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(b"x")
            self.close_connection = True
        elif parts.path == "/stream":
            # No Content-Length: the body ends when the connection closes.
            self.send_response(200)
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(b"x" * int(query["n"]))
            self.close_connection = True
        elif parts.path == "/encoded":
            # Content-Encoding sent whatever the request accepted: a bomb of `n` zeros, or a small body
            body, encoding = _encoded(query["as"], int(query["n"]))
            self._reply(200, body, {"Content-Encoding": encoding, "Content-Type": "text/plain"})
        elif parts.path == "/redirect":
            self._reply(302, b"", {"Location": query["to"]})
        elif parts.path == "/hop1":
            self._reply(302, b"", {"Location": "/hop2"})
        elif parts.path == "/hop2":
            self._reply(302, b"", {"Location": "/ok"})
        elif parts.path == "/together":
            try:
                self.server.tls.together.wait()  # type: ignore[attr-defined]
                self._reply(200, b"together")
            except threading.BrokenBarrierError:
                self._reply(504, b"alone")
        elif parts.path == "/slow":
            time.sleep(1.0)
            self._reply(200, b"late")
        else:
            self._reply(404)

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if urlsplit(self.path).path == "/echo-body":
            self._reply(200, body)
        else:
            self._reply(404)


@functools.lru_cache(maxsize=16)
def _encoded(encoding: str, size: int) -> tuple[bytes, str]:
    if encoding == "gzip":
        return bombs.gzip_bomb(size), "gzip"
    if encoding == "deflate":
        return bombs.zlib_bomb(size), "deflate"
    if encoding == "br":
        import brotli

        packer = brotli.Compressor(quality=1)
        block = bytes(1 << 20)
        parts = [packer.process(block) for _ in range(size // len(block))]
        return b"".join([*parts, packer.process(bytes(size % len(block))), packer.finish()]), "br"
    if encoding == "gzip,gzip":
        return gzip.compress(bombs.gzip_bomb(size)), "gzip, gzip"
    raise ValueError(encoding)


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def handle_error(self, request: object, client_address: object) -> None:
        # Clients that time out or stop reading on purpose leave broken pipes behind.
        pass


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TLSServer]:
    ca = trustme.CA()
    server_cert = ca.issue_cert("localhost", "pinned.test", IDN_ASCII, "127.0.0.1", "::1")
    ca_path = tmp_path_factory.mktemp("outbound-ca") / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_path))

    httpd = _QuietServer(("127.0.0.1", 0), _Handler)
    tls = TLSServer(port=httpd.server_address[1], ca_path=ca_path)
    httpd.tls = tls  # type: ignore[attr-defined]

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_cert.configure_cert(context)
    context.sni_callback = lambda _sock, name, _ctx: tls.sni_names.append(name)
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)

    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield tls
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def server(
    tls_server: TLSServer,
    monkeypatch: pytest.MonkeyPatch,
    resolver: FakeResolver,
    settings,
) -> TLSServer:
    """The loopback TLS server, trusted through REQUESTS_CA_BUNDLE, with loopback allowed."""
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(tls_server.ca_path))
    settings.OUTBOUND_ALLOW_LOOPBACK = True
    resolver.table["localhost"] = ["127.0.0.1"]
    resolver.table["pinned.test"] = ["127.0.0.1"]
    resolver.table[IDN_ASCII] = ["127.0.0.1"]
    resolver.table["internal.test"] = ["10.0.0.5"]
    resolver.strict = True
    tls_server.sni_names.clear()
    tls_server.connections.clear()
    return tls_server


# --- address policy -------------------------------------------------------------------------------

REFUSED_ADDRESSES = [
    "10.0.0.1",
    "172.16.0.1",
    "192.168.1.1",
    "100.64.0.1",
    "100.100.100.200",
    "169.254.169.254",
    "169.254.1.1",
    "0.0.0.0",
    "0.1.2.3",
    "224.0.0.1",
    "239.255.255.250",
    "240.0.0.1",
    "255.255.255.255",
    "192.0.0.8",
    "192.0.2.1",
    "198.18.0.1",
    "198.51.100.1",
    "203.0.113.1",
    "192.88.99.1",
    "::",
    "::a9fe:a9fe",
    "::ffff:169.254.169.254",
    "::ffff:10.0.0.1",
    "::ffff:127.0.0.1",
    "::ffff:0:a9fe:a9fe",
    "64:ff9b::a9fe:a9fe",
    "64:ff9b::7f00:1",
    "64:ff9b:1::808:808",
    "2002:a9fe:a9fe::1",
    "2002:7f00:1::1",
    "2001:0:4136:e378:8000:63bf:3fff:fdd2",
    "2001:db8::1",
    "3fff::1",
    "100::1",
    "5f00::1",
    "fc00::1",
    "fd00:ec2::254",
    "fe80::1",
    "fec0::1",
    "ff02::1",
    "4000::1",
]

PUBLIC_ADDRESSES = [
    "93.184.215.14",
    "8.8.8.8",
    "1.1.1.1",
    "2606:4700:4700::1111",
    "::ffff:8.8.8.8",
    "64:ff9b::808:808",
    "2002:808:808::1",
]


@pytest.mark.parametrize("address", REFUSED_ADDRESSES)
def test_special_addresses_are_refused(address: str) -> None:
    # given a non-public address
    # when / then
    assert not is_address_allowed(ip(address), allow_loopback=False)


@pytest.mark.parametrize("address", REFUSED_ADDRESSES)
def test_loopback_switch_leaves_every_other_range_refused(address: str) -> None:
    # given the loopback switch on
    # when / then
    assert not is_address_allowed(ip(address), allow_loopback=True)


@pytest.mark.parametrize("address", PUBLIC_ADDRESSES)
def test_public_unicast_addresses_are_allowed(address: str) -> None:
    # given a public address, possibly embedded in an IPv6 form
    # when / then
    assert is_address_allowed(ip(address), allow_loopback=False)


@pytest.mark.parametrize("address", ["127.0.0.1", "127.10.20.30", "::1"])
def test_loopback_is_refused_unless_switched_on(address: str) -> None:
    # given a loopback address
    # when / then
    assert not is_address_allowed(ip(address), allow_loopback=False)
    assert is_address_allowed(ip(address), allow_loopback=True)


@pytest.mark.parametrize(
    ("host", "expected"),
    [
        ("2130706433", "127.0.0.1"),
        ("0177.0.0.1", "127.0.0.1"),
        ("0x7f.0.0.1", "127.0.0.1"),
        ("0x7f000001", "127.0.0.1"),
        ("127.1", "127.0.0.1"),
        ("0", "0.0.0.0"),
        ("127.0.0.1.", "127.0.0.1"),
        ("[::]", "::"),
        ("[::ffff:127.0.0.1]", "::ffff:7f00:1"),
        ("example.com", None),
        ("123.example", None),
        ("1.2.3.4 x", None),
    ],
)
def test_numeric_hosts_are_read_like_a_resolver_reads_them(host: str, expected: str | None) -> None:
    # given a host in one of the spellings inet_aton / inet_pton accept (or a name)
    # when
    parsed = outbound.parse_ip_literal(host)
    # then
    assert parsed == (ip(expected) if expected else None)


# --- hostile URLs: refused before any socket ----------------------------------------------------


def _via_request(url: str, schemes: frozenset[str]) -> object:
    return outbound.request("GET", url, allowed_schemes=schemes)


def _via_session(url: str, schemes: frozenset[str]) -> object:
    with GuardedSession() as session:
        return session.request("POST", url, allowed_schemes=schemes, json={"event": "x"})


def _via_send_bytes(url: str, schemes: frozenset[str]) -> object:
    with GuardedSession() as session:
        return session.send_bytes("POST", url, body=b"{}", headers={}, allowed_schemes=schemes)


CLIENTS: dict[str, Callable[[str, frozenset[str]], object]] = {
    "request": _via_request,
    "session": _via_session,
    "send_bytes": _via_send_bytes,
}


@pytest.mark.parametrize("client", CLIENTS.values(), ids=CLIENTS.keys())
@pytest.mark.parametrize("case", HOSTILE_CASES, ids=[case.id for case in HOSTILE_CASES])
def test_hostile_url_is_blocked_without_opening_a_socket(
    case: HostileCase, client: Callable, resolver: FakeResolver, no_sockets: list, settings
) -> None:
    # given loopback off, and the hostile answer for the case's hostname
    settings.OUTBOUND_ALLOW_LOOPBACK = False
    resolver.table.update(case.resolves_to)
    # when
    with pytest.raises(OutboundBlocked) as refused:
        client(case.url, case.allowed_schemes)
    # then
    assert refused.value.reason == case.reason
    assert no_sockets == []


@pytest.mark.parametrize("case", HOSTILE_CASES, ids=[case.id for case in HOSTILE_CASES])
def test_hostile_url_never_opens_a_socket_through_httpx(
    case: HostileCase, resolver: FakeResolver, no_sockets: list, settings
) -> None:
    # given loopback off, and the hostile answer for the case's hostname
    settings.OUTBOUND_ALLOW_LOOPBACK = False
    resolver.table.update(case.resolves_to)
    # when: the guard refuses it, or httpx's stricter parser already does (octal, control chars)
    with (
        guarded_httpx_client(allowed_schemes=case.allowed_schemes) as client,
        pytest.raises((OutboundBlocked, httpx.InvalidURL)),
    ):
        client.get(case.url)
    # then
    assert no_sockets == []


def test_corpus_is_large_enough() -> None:
    assert len(HOSTILE_CASES) >= 40


@pytest.mark.parametrize(
    "url",
    [
        "https://10.0.0.1/",
        "https://169.254.169.254/",
        "https://[::ffff:169.254.169.254]/",
        "https://0.0.0.0/",
        "https://internal.test/",
    ],
)
def test_loopback_switch_does_not_open_other_ranges(
    url: str, resolver: FakeResolver, no_sockets: list, settings
) -> None:
    # given loopback allowed
    settings.OUTBOUND_ALLOW_LOOPBACK = True
    resolver.table["internal.test"] = ["10.0.0.5"]
    # when
    with pytest.raises(OutboundBlocked) as refused:
        outbound.request("GET", url)
    # then
    assert refused.value.reason == "address_not_allowed"
    assert no_sockets == []


def test_loopback_url_is_refused_when_switch_is_off(tls_server: TLSServer, no_sockets: list, settings) -> None:
    # given a live loopback server but the switch off
    settings.OUTBOUND_ALLOW_LOOPBACK = False
    # when
    with pytest.raises(OutboundBlocked) as refused:
        outbound.request("GET", tls_server.url("/ok", host="127.0.0.1"))
    # then
    assert refused.value.reason == "address_not_allowed"
    assert no_sockets == []


def test_loopback_ipv6_passes_the_guard_when_switched_on(resolver: FakeResolver, settings) -> None:
    # given loopback allowed and nothing listening on [::1]:1
    settings.OUTBOUND_ALLOW_LOOPBACK = True
    # when
    with pytest.raises(OutboundError) as failed:
        outbound.request("GET", "https://[::1]:1/", timeout=(0.5, 0.5))
    # then the guard let it through: the failure is the connection, not a refusal
    assert failed.value.reason == "connection_error"


def test_blocked_call_logs_no_userinfo_or_query(
    resolver: FakeResolver, no_sockets: list, caplog: pytest.LogCaptureFixture, settings
) -> None:
    # given a URL carrying a secret in its query, to a name that resolves privately
    settings.OUTBOUND_ALLOW_LOOPBACK = False
    resolver.table["internal.test"] = ["10.0.0.5"]
    caplog.set_level(logging.DEBUG, logger="apps.platform.outbound")
    # when
    with pytest.raises(OutboundBlocked) as refused:
        outbound.request("GET", "https://internal.test/hook?token=s3cr3t#frag")
    # then
    assert "https://internal.test/hook" in caplog.text
    assert "s3cr3t" not in caplog.text
    assert "s3cr3t" not in str(refused.value)


def test_userinfo_never_reaches_logs_or_errors(no_sockets: list, caplog: pytest.LogCaptureFixture) -> None:
    # given credentials in the URL
    caplog.set_level(logging.DEBUG, logger="apps.platform.outbound")
    # when
    with pytest.raises(OutboundBlocked) as refused:
        outbound.request("GET", "https://admin:hunter2@example.com/x")
    # then
    assert "hunter2" not in caplog.text
    assert "hunter2" not in str(refused.value)


@pytest.mark.parametrize("keyword", ["proxies", "allow_redirects", "verify", "stream"])
def test_keywords_that_would_weaken_the_guard_are_rejected(keyword: str, no_sockets: list) -> None:
    # when / then
    with pytest.raises(TypeError):
        outbound.request("GET", "https://example.com/", **{keyword: False})


# --- live TLS server on loopback ------------------------------------------------------------------


def test_get_returns_the_body(server: TLSServer) -> None:
    # when
    response = outbound.request("GET", server.url("/ok"))
    # then
    assert response.status_code == 200
    assert response.content == b"hello outbound"
    assert response.text == "hello outbound"
    assert response.headers["Content-Type"] == "text/plain"
    assert response.url == server.url("/ok")


def test_json_body_is_decoded(server: TLSServer) -> None:
    # when
    response = outbound.request("GET", server.url("/json"))
    # then
    assert response.json() == {"ok": True}


def test_connection_goes_to_the_checked_address_with_hostname_kept_for_tls_and_host(
    server: TLSServer, connect_spy: list[str], resolver: FakeResolver
) -> None:
    # given a name only the guard's resolver knows (the system resolver would fail on it)
    # when
    response = outbound.request("GET", server.url("/echo-host", host="pinned.test"))
    # then the socket went to the checked IP, the name was resolved once, SNI and Host kept it
    assert connect_spy == ["127.0.0.1"]
    assert resolver.calls == ["pinned.test"]
    assert server.sni_names == ["pinned.test"]
    assert response.content == f"pinned.test:{server.port}".encode()


def test_certificate_is_verified(server: TLSServer, monkeypatch: pytest.MonkeyPatch) -> None:
    # given the test CA no longer trusted
    monkeypatch.delenv("REQUESTS_CA_BUNDLE")
    # when
    with pytest.raises(OutboundError) as failed:
        outbound.request("GET", server.url("/ok"))
    # then
    assert failed.value.reason == "tls_error"


def test_proxy_environment_is_ignored(server: TLSServer, monkeypatch: pytest.MonkeyPatch) -> None:
    # given proxy variables that would send the call elsewhere
    monkeypatch.setenv("HTTPS_PROXY", "http://10.9.9.9:3128")
    monkeypatch.setenv("ALL_PROXY", "http://10.9.9.9:3128")
    # when
    response = outbound.request("GET", server.url("/ok"))
    # then
    assert response.status_code == 200


def test_netrc_credentials_are_never_attached(
    server: TLSServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # given a netrc with credentials for the receiver
    netrc = tmp_path / "netrc"
    netrc.write_text("machine localhost login admin password hunter2\n")
    netrc.chmod(0o600)
    monkeypatch.setenv("NETRC", str(netrc))
    # when
    response = outbound.request("GET", server.url("/echo-auth"))
    # then
    assert response.content == b""


def test_body_at_the_limit_is_accepted(server: TLSServer) -> None:
    # when
    response = outbound.request("GET", server.url("/big?n=1024"), max_bytes=1024)
    # then
    assert len(response.content) == 1024


def test_declared_body_over_the_limit_is_refused_before_reading(server: TLSServer) -> None:
    # given a Content-Length of 1 GB
    # when
    with pytest.raises(OutboundError) as failed:
        outbound.request("GET", server.url("/declared?n=1000000000"), max_bytes=1024)
    # then
    assert failed.value.reason == "response_too_large"


@pytest.mark.parametrize("declared", ["%C2%B2", "%C2%B9"])
def test_a_declared_length_in_other_digits_is_no_length(server: TLSServer, declared: str) -> None:
    # given a Content-Length of "²" or "¹" (Latin-1 on the wire; str.isdigit() is true, int() raises)
    # when
    response = outbound.request("GET", server.url(f"/declared?n={declared}"), max_bytes=1024)
    # then it is ignored, as a client ignores it, and the read stays capped
    assert response.content == b"x"


def test_streamed_body_over_the_limit_is_refused(server: TLSServer) -> None:
    # given a body without Content-Length
    # when
    with pytest.raises(OutboundError) as failed:
        outbound.request("GET", server.url("/stream?n=200000"), max_bytes=1024)
    # then
    assert failed.value.reason == "response_too_large"


BOMB_BYTES = 300 * 1024 * 1024
CAP = 4 * 1024 * 1024  # over every bomb's encoded size: only decoded bytes reach it


def _peak_of(call: Callable[[], object]) -> tuple[object, int]:
    tracemalloc.start()
    try:
        try:
            outcome: object = call()
        except Exception as exc:  # asserted by the caller
            outcome = exc
        return outcome, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _get_requests(url: str, **kwargs: Any) -> outbound.GuardedResponse:
    return outbound.request("GET", url, **kwargs)


def _get_libcurl(url: str, **kwargs: Any) -> outbound.GuardedResponse:
    with GuardedSession() as session:
        return session.send_bytes("GET", url, body=b"", headers={"Accept-Encoding": "gzip, deflate, br"}, **kwargs)


@pytest.mark.parametrize("get", [_get_requests, _get_libcurl], ids=["requests", "libcurl"])
@pytest.mark.parametrize("encoding", ["gzip", "deflate", "br", "gzip,gzip"])
def test_a_compression_bomb_stops_at_the_cap_in_decoded_bytes(server: TLSServer, get, encoding: str) -> None:
    # given a body of a couple of MB or less that inflates to 300 MiB
    url = server.url(f"/encoded?as={encoding}&n={BOMB_BYTES}")
    _encoded(encoding, BOMB_BYTES)  # built before memory is watched
    # when
    outcome, peak = _peak_of(lambda: get(url, max_bytes=CAP))
    # then refused at the cap, with never much more than the cap in memory
    assert isinstance(outcome, OutboundError), outcome
    assert outcome.reason == "response_too_large"
    assert peak < 8 * CAP + len(_encoded(encoding, BOMB_BYTES)[0])


@pytest.mark.parametrize("get", [_get_requests, _get_libcurl], ids=["requests", "libcurl"])
@pytest.mark.parametrize("encoding", ["gzip", "deflate", "br"])
def test_an_encoded_body_under_the_cap_comes_decoded(server: TLSServer, get, encoding: str) -> None:
    # when a small encoded body arrives, whatever the request asked for
    response = get(server.url(f"/encoded?as={encoding}&n=5000"), max_bytes=CAP)
    # then the caller reads the decoded bytes
    assert response.content == bytes(len(response.content)) and len(response.content) >= 5000


def test_redirect_is_not_followed_by_default(server: TLSServer, connect_spy: list[str]) -> None:
    # when
    response = outbound.request("GET", server.url("/redirect?to=https://10.0.0.1/"))
    # then the 3xx comes back as is
    assert response.status_code == 302
    assert response.headers["Location"] == "https://10.0.0.1/"
    assert connect_spy == ["127.0.0.1"]


def test_redirect_within_the_limit_is_followed(server: TLSServer) -> None:
    # when
    response = outbound.request("GET", server.url("/redirect?to=/ok"), max_redirects=1)
    # then
    assert response.status_code == 200
    assert response.content == b"hello outbound"
    assert response.url == server.url("/ok")


@pytest.mark.parametrize(
    ("location", "schemes", "reason"),
    [
        ("https://10.0.0.1/", {"https"}, "address_not_allowed"),
        ("http://169.254.169.254/latest/meta-data/", {"https", "http"}, "address_not_allowed"),
        ("http://169.254.169.254/latest/meta-data/", {"https"}, "scheme_not_allowed"),
        ("https://internal.test/", {"https"}, "address_not_allowed"),
        ("https://[::ffff:169.254.169.254]/", {"https"}, "address_not_allowed"),
    ],
)
def test_redirect_hop_is_checked_before_connecting(
    server: TLSServer, connect_spy: list[str], location: str, schemes: set[str], reason: str
) -> None:
    # when
    with pytest.raises(OutboundBlocked) as refused:
        outbound.request("GET", server.url(f"/redirect?to={location}"), max_redirects=1, allowed_schemes=schemes)
    # then only the first hop was connected
    assert refused.value.reason == reason
    assert connect_spy == ["127.0.0.1"]


def test_credentials_are_dropped_on_a_cross_origin_hop(server: TLSServer) -> None:
    # given a redirect from localhost to another host name
    target = server.url("/echo-auth", host="pinned.test")
    # when
    response = outbound.request(
        "GET",
        server.url(f"/redirect?to={target}"),
        max_redirects=1,
        headers={"Authorization": "Bearer s3cr3t"},
    )
    # then
    assert response.status_code == 200
    assert response.content == b""


def test_redirect_body_is_never_read_whole(server: TLSServer, monkeypatch: pytest.MonkeyPatch) -> None:
    # given that reading a body in one piece (unbounded) fails the test
    def unbounded_read(_response: requests.Response) -> bytes:
        raise AssertionError("a response body was read without the size cap")

    monkeypatch.setattr(requests.Response, "content", property(unbounded_read))
    # when
    response = outbound.request("GET", server.url("/redirect?to=/ok"), max_bytes=1024)
    # then
    assert response.status_code == 302


def test_more_hops_than_allowed_is_an_error(server: TLSServer) -> None:
    # given /hop1 -> /hop2 -> /ok
    # when
    with pytest.raises(OutboundError) as failed:
        outbound.request("GET", server.url("/hop1"), max_redirects=1)
    # then
    assert failed.value.reason == "too_many_redirects"


def test_slow_server_times_out(server: TLSServer) -> None:
    # when
    with pytest.raises(OutboundError) as failed:
        outbound.request("GET", server.url("/slow"), timeout=(1, 0.2))
    # then
    assert failed.value.reason == "timeout"


def test_guarded_session_reuses_its_connection(server: TLSServer) -> None:
    # given one pooled session
    with GuardedSession() as session:
        # when
        first = session.request("GET", server.url("/ok"))
        second = session.request("GET", server.url("/json"))
    # then
    assert (first.status_code, second.status_code) == (200, 200)
    assert len(server.connections) == 1


def test_guarded_session_applies_the_guard(server: TLSServer, no_sockets: list) -> None:
    # given a pooled session with loopback allowed
    with GuardedSession() as session, pytest.raises(OutboundBlocked):
        # when / then
        session.request("GET", "https://internal.test/")
    assert no_sockets == []


# --- GuardedSession.send_bytes (the webhook engine's call) -----------------------------------------


def _send(session: GuardedSession, url: str, **kwargs: Any) -> outbound.GuardedResponse:
    return session.send_bytes("GET", url, body=b"", headers={}, **kwargs)


def test_send_bytes_pins_the_checked_address_and_keeps_the_hostname(
    server: TLSServer, connect_spy: list[str], resolver: FakeResolver
) -> None:
    # when two calls go to a name only the guard's resolver knows
    with GuardedSession() as session:
        first = _send(session, server.url("/echo-host", host="pinned.test"))
        second = _send(session, server.url("/ok", host="pinned.test"))
    # then one pooled connection to the checked IP, the name resolved per call, SNI and Host kept it
    assert first.content == f"pinned.test:{server.port}".encode()
    assert (second.status_code, second.content) == (200, b"hello outbound")
    assert connect_spy == ["127.0.0.1"]
    assert resolver.calls == ["pinned.test", "pinned.test"]
    assert server.sni_names == ["pinned.test"]
    assert len(server.connections) == 1


def test_send_bytes_reaches_an_internationalised_name_by_its_ascii_form(
    server: TLSServer, resolver: FakeResolver
) -> None:
    # when a call goes to a name written in Cyrillic
    with GuardedSession() as session:
        response = _send(session, server.url("/echo-host", host=IDN))
    # then it was resolved, checked, sent in SNI and Host in its IDNA form, as requests does
    assert response.content == f"{IDN_ASCII}:{server.port}".encode()
    assert resolver.calls == [IDN_ASCII] and server.sni_names[-1] == IDN_ASCII


def test_send_bytes_sends_a_non_ascii_path_percent_encoded_as_requests_does(server: TLSServer) -> None:
    # when the path and query carry Cyrillic
    with GuardedSession() as session:
        response = _send(session, server.url("/echo-path/заказы?q=да"))
        expected = session.request("GET", server.url("/echo-path/заказы?q=да")).content
    # then the request line carries them percent-encoded, as the requests side sends them
    assert response.status_code == 200
    assert response.content == expected == b"/echo-path/%D0%B7%D0%B0%D0%BA%D0%B0%D0%B7%D1%8B?q=%D0%B4%D0%B0"


def test_send_bytes_posts_the_exact_bytes_and_headers(server: TLSServer) -> None:
    # given a body and headers as the webhook engine sends them
    body = b'{"id":"e1","type":"chat.created","data":{}}'
    with GuardedSession() as session:
        # when
        response = session.send_bytes(
            "POST", server.url("/echo-body"), body=body, headers={"X-Service-Event": "chat.created"}
        )
    # then the receiver read those bytes
    assert response.status_code == 200
    assert response.content == body


def test_send_bytes_verifies_the_certificate(server: TLSServer, monkeypatch: pytest.MonkeyPatch) -> None:
    # given the test CA no longer trusted
    monkeypatch.delenv("REQUESTS_CA_BUNDLE")
    with GuardedSession() as session, pytest.raises(OutboundError) as failed:
        # when
        _send(session, server.url("/ok"))
    # then
    assert failed.value.reason == "tls_error"


def test_send_bytes_never_follows_a_redirect(server: TLSServer, connect_spy: list[str]) -> None:
    # when
    with GuardedSession() as session:
        response = _send(session, server.url("/redirect?to=https://10.0.0.1/"))
    # then the 3xx is the answer and nothing else was connected
    assert response.status_code == 302
    assert response.headers["Location"] == "https://10.0.0.1/"
    assert connect_spy == ["127.0.0.1"]


@pytest.mark.parametrize("path", ["/declared?n=1000000000", "/stream?n=200000"])
def test_send_bytes_caps_the_body(server: TLSServer, path: str) -> None:
    # when
    with GuardedSession() as session, pytest.raises(OutboundError) as failed:
        _send(session, server.url(path), max_bytes=1024)
    # then
    assert failed.value.reason == "response_too_large"


def test_send_bytes_times_out(server: TLSServer) -> None:
    # when
    with GuardedSession() as session, pytest.raises(OutboundError) as failed:
        _send(session, server.url("/slow"), timeout=(1, 0.2))
    # then
    assert failed.value.reason == "timeout"


def test_submit_bytes_keeps_calls_in_flight_at_once(server: TLSServer, connect_spy: list[str]) -> None:
    # given a server answering only once three requests wait at the same time
    server.together = threading.Barrier(3, timeout=5)
    with GuardedSession() as session:
        # when one thread starts three calls without waiting for any
        calls = [
            session.submit_bytes("GET", server.url("/together", host="pinned.test"), body=b"", headers={})
            for _ in range(3)
        ]
        answers = [call.result(timeout=10) for call in calls]
    # then they were in flight together, each on its own connection to the checked address
    assert [(a.status_code, a.content) for a in answers] == [(200, b"together")] * 3
    assert connect_spy == ["127.0.0.1"] * 3
    assert server.sni_names == ["pinned.test"] * 3


def test_submit_bytes_refuses_a_private_address_in_its_future(
    resolver: FakeResolver, no_sockets: list, settings
) -> None:
    # given a name that resolves to a private address
    settings.OUTBOUND_ALLOW_LOOPBACK = True
    resolver.table["internal.test"] = ["10.0.0.5"]
    with GuardedSession() as session:
        # when
        call = session.submit_bytes("POST", "https://internal.test/hook", body=b"{}", headers={})
        # then the refusal comes through the future, and no socket was opened
        with pytest.raises(OutboundBlocked) as refused:
            call.result(timeout=10)
    assert refused.value.reason == "address_not_allowed"
    assert no_sockets == []


@pytest.mark.parametrize(
    ("pinned", "offered"),
    [
        (("127.0.0.1", 8443), ("10.0.0.5", 8443)),  # another address
        (("127.0.0.1", 8443), ("127.0.0.1", 22)),  # another port
        (("10.0.0.5", 443), ("10.0.0.5", 443)),  # the pinned one, no longer allowed
    ],
)
def test_libcurl_may_open_a_socket_only_to_the_checked_address(
    pinned: tuple[str, int], offered: tuple[str, int], no_sockets: list, settings
) -> None:
    # given a call pinned to a checked address, and libcurl about to connect elsewhere
    settings.OUTBOUND_ALLOW_LOOPBACK = True
    call = outbound.curl.call._Call(
        url="https://x.test/", safe="https://x.test/", method="POST", max_bytes=1, read=1, deadline_at=0
    )
    call.address = pinned
    address = outbound.curl.pycurl_address(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, offered)
    # when
    opened = call.on_open_socket(0, address)
    # then no socket, and the call fails as refused
    assert opened is None
    assert call.refused == "address_not_allowed"
    assert no_sockets == []


def test_a_socket_refused_by_the_last_gate_fails_the_call_as_blocked(
    server: TLSServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given an address the guard pinned, that the gate before libcurl's connect no longer allows
    monkeypatch.setattr(outbound.curl.call, "is_address_allowed", lambda *args, **kwargs: False)
    with GuardedSession() as session, pytest.raises(OutboundBlocked) as refused:
        # when
        _send(session, server.url("/ok"))
    # then the call is refused as blocked, and the server saw no connection
    assert refused.value.reason == "address_not_allowed"
    assert server.connections == []


@pytest.mark.parametrize("headers", [{"X-Event": "a\r\nX-Injected: 1"}, {"X-Event\n": "a"}, {"X-A: b": "c"}])
def test_send_bytes_refuses_a_header_that_would_add_lines(headers: dict, no_sockets: list) -> None:
    # when a header name or value carries a line break or a colon in the name
    with GuardedSession() as session:
        call = session.submit_bytes("POST", "https://93.184.215.14/hook", body=b"{}", headers=headers)
        # then the call fails before anything is sent
        with pytest.raises(ValueError):
            call.result(timeout=10)
    assert no_sockets == []


def test_send_bytes_ignores_proxy_environment(server: TLSServer, monkeypatch: pytest.MonkeyPatch) -> None:
    # given proxy variables that would send the call elsewhere
    monkeypatch.setenv("HTTPS_PROXY", "http://10.9.9.9:3128")
    monkeypatch.setenv("ALL_PROXY", "http://10.9.9.9:3128")
    # when
    with GuardedSession() as session:
        response = _send(session, server.url("/ok"))
    # then
    assert response.status_code == 200


# --- httpx transport ------------------------------------------------------------------------------


def test_httpx_client_reaches_loopback_server_when_allowed(server: TLSServer, connect_spy: list[str]) -> None:
    # when
    with guarded_httpx_client() as client:
        response = client.get(server.url("/echo-host", host="pinned.test"))
    # then
    assert response.status_code == 200
    assert response.content == f"pinned.test:{server.port}".encode()
    assert connect_spy == ["127.0.0.1"]
    assert server.sni_names == ["pinned.test"]


def test_httpx_client_does_not_follow_redirects(server: TLSServer, connect_spy: list[str]) -> None:
    # when
    with guarded_httpx_client() as client:
        response = client.get(server.url("/redirect?to=https://10.0.0.1/"))
    # then
    assert response.status_code == 302
    assert connect_spy == ["127.0.0.1"]


def test_httpx_transport_checks_hops_a_caller_chooses_to_follow(server: TLSServer, connect_spy: list[str]) -> None:
    # given a caller overriding follow_redirects on one request
    with guarded_httpx_client() as client, pytest.raises(OutboundBlocked) as refused:
        # when
        client.get(server.url("/redirect?to=https://internal.test/"), follow_redirects=True)
    # then
    assert refused.value.reason == "address_not_allowed"
    assert connect_spy == ["127.0.0.1"]


def test_httpx_client_refuses_environment_overrides() -> None:
    # when / then
    with pytest.raises(TypeError):
        guarded_httpx_client(follow_redirects=True)


def test_async_httpx_client_reaches_loopback_server(server: TLSServer) -> None:
    # given
    async def fetch() -> httpx.Response:
        async with guarded_async_httpx_client() as client:
            return await client.get(server.url("/ok"))

    # when
    response = asyncio.run(fetch())
    # then
    assert response.status_code == 200
    assert response.content == b"hello outbound"


def test_async_httpx_client_refuses_private_address(resolver: FakeResolver, no_sockets: list, settings) -> None:
    # given
    settings.OUTBOUND_ALLOW_LOOPBACK = True
    resolver.table["internal.test"] = ["10.0.0.5"]

    async def fetch() -> httpx.Response:
        async with guarded_async_httpx_client() as client:
            return await client.get("https://internal.test/")

    # when
    with pytest.raises(OutboundBlocked) as refused:
        asyncio.run(fetch())
    # then
    assert refused.value.reason == "address_not_allowed"
    assert no_sockets == []


# --- overall deadline -------------------------------------------------------------------------------


def _get_with_deadline(url: str) -> object:
    return outbound.request("GET", url, timeout=(1, 1), deadline=1.0)


def _send_bytes_with_deadline(url: str) -> object:
    with GuardedSession() as session:
        return session.send_bytes("POST", url, body=b"{}", headers={}, timeout=(1, 1), deadline=1.0)


def _get_without_a_deadline(url: str) -> object:
    # no deadline named: settings.OUTBOUND_DEADLINE_SECONDS (1 s in this test) bounds the call
    return outbound.request("GET", url, timeout=(1, 1))


@pytest.mark.parametrize(
    "call",
    [_get_with_deadline, _send_bytes_with_deadline, _get_without_a_deadline],
    ids=["request", "send_bytes", "request-default-deadline"],
)
def test_deadline_bounds_a_trickling_response(call, settings, monkeypatch, tmp_path):
    """A server that sends its headers one byte every 50 ms is cut at the deadline."""
    settings.OUTBOUND_DEADLINE_SECONDS = 1.0
    import socket as _socket
    import ssl as _ssl
    import threading as _threading
    import time as _time

    import trustme

    settings.OUTBOUND_ALLOW_LOOPBACK = True
    ca = trustme.CA()
    cert = ca.issue_cert("localhost")
    ca_path = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_path))
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(ca_path))
    monkeypatch.setattr(outbound.policy, "resolve_host", lambda host, port: [ipaddress.ip_address("127.0.0.1")])

    server_ctx = _ssl.SSLContext(_ssl.PROTOCOL_TLS_SERVER)
    cert.configure_cert(server_ctx)
    listener = _socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    port = listener.getsockname()[1]
    stop = _threading.Event()

    def serve():
        conn, _ = listener.accept()
        with server_ctx.wrap_socket(conn, server_side=True) as tls:
            tls.recv(65536)
            for byte in b"HTTP/1.1 200 OK\r\nX-Slow: " + b"a" * 1000:
                if stop.is_set():
                    break
                try:
                    tls.sendall(bytes([byte]))
                except OSError:
                    break
                _time.sleep(0.05)

    thread = _threading.Thread(target=serve, daemon=True)
    thread.start()
    started = _time.monotonic()
    with pytest.raises(outbound.OutboundError) as caught:
        call(f"https://localhost:{port}/")
    elapsed = _time.monotonic() - started
    stop.set()
    listener.close()
    assert caught.value.reason == "deadline_exceeded"
    assert elapsed < 10  # per-read timeouts alone would let it run for ~50 s


def test_deadlines_share_one_watchdog_thread_and_it_sleeps_when_idle():
    """Arming a deadline starts no thread of its own: one watchdog per process fires them all,
    fires only the expired ones, and is idle (not ticking) once nothing is armed."""
    import threading as _threading
    import time as _time

    # given a watchdog that has run once in this process
    with outbound.deadline._Deadline(5.0):
        pass
    before = _threading.active_count()
    # when 200 calls arm and disarm a deadline, and two overlapping ones expire at different times
    for _ in range(200):
        with outbound.deadline._Deadline(5.0):
            pass
    short, long = outbound.deadline._Deadline(0.1), outbound.deadline._Deadline(30.0)
    with short, long:
        _time.sleep(0.1 + outbound.WATCHDOG_TICK * 4)
        fired = (short.fired, long.fired)
    # then no thread was added, only the expired deadline fired, and nothing stays armed
    assert _threading.active_count() <= before  # (threads of earlier tests may end meanwhile)
    assert [t.name for t in _threading.enumerate()].count("outbound-deadline") == 1
    assert fired == (True, False)
    assert outbound.deadline._watchdog.armed == {}
    for _ in range(100):
        if not outbound.deadline._watchdog.wake.is_set():
            break
        _time.sleep(outbound.WATCHDOG_TICK)
    assert not outbound.deadline._watchdog.wake.is_set()


def test_what_a_url_says_is_kept_and_what_it_reaches_is_checked_on_every_call(
    resolver: FakeResolver, no_sockets: list, settings
) -> None:
    # The guard keeps the parse of a URL's text per process; the name's addresses and the loopback
    # switch are read again by every call.
    settings.OUTBOUND_ALLOW_LOOPBACK = False
    https = frozenset({"https"})
    # a refused shape is refused every time
    for _ in range(2):
        with pytest.raises(OutboundBlocked) as refused:
            _via_send_bytes("https://user@hooks.example/in", https)
        assert refused.value.reason == "userinfo_not_allowed"
    # a name that answered with a public address, then with loopback: the second call is refused
    resolver.table["hooks.example"] = [PUBLIC_V4]
    with pytest.raises(OutboundError):
        _via_send_bytes("https://hooks.example/in", https)
    assert len(no_sockets) == 1
    resolver.table["hooks.example"] = ["127.0.0.1"]
    with pytest.raises(OutboundBlocked) as refused:
        _via_send_bytes("https://hooks.example/in", https)
    assert refused.value.reason == "address_not_allowed"
    # a loopback literal reached with the switch on is refused once it is off
    settings.OUTBOUND_ALLOW_LOOPBACK = True
    with pytest.raises(OutboundError):
        _via_send_bytes("https://127.0.0.1:8443/in", https)
    assert len(no_sockets) == 2
    settings.OUTBOUND_ALLOW_LOOPBACK = False
    with pytest.raises(OutboundBlocked) as refused:
        _via_send_bytes("https://127.0.0.1:8443/in", https)
    assert refused.value.reason == "address_not_allowed"
    assert len(no_sockets) == 2
