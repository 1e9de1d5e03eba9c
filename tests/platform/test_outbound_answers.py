"""How the libcurl side of the guarded client (`send_bytes`, `submit_bytes`: the webhook engine's
transport) judges an answer: by its status line and headers. A body the peer ends by closing the
connection (Python's `http.server`, HTTP/1.0-style, no Content-Length), over TLS without a
close_notify too, is an answer; so is a body cut short after complete headers (`complete` False).
A connection closed without an answer is a transport error, a failed handshake or certificate is
`tls_error`, and the call's own limits (deadline, size cap) still hold over the body.

Every server here is a real one on loopback; the TLS ones are trusted through REQUESTS_CA_BUNDLE,
as the other outbound tests do.
"""

from __future__ import annotations

import datetime
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import trustme

from apps.platform.outbound import GuardedSession, OutboundError

BOTH = frozenset({"http", "https"})


class _CloseDelimited(BaseHTTPRequestHandler):
    """A receiver as Python's standard library writes one: HTTP/1.0, no Content-Length, the answer
    ends when the connection closes (over TLS, Python's ssl never sends a close_notify)."""

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        path = self.path
        if path != "/unread":  # /unread: answers without reading the request body first
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if path == "/silent":  # the connection closes without an answer
            self.close_connection = True
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        if path == "/short":  # announces more than it sends
            self.send_header("Content-Length", "100")
        self.end_headers()
        if path == "/slow-body":  # headers at once, then a body slower than any deadline
            for _ in range(40):
                self.wfile.write(b"x")
                self.wfile.flush()
                time.sleep(0.1)
            return
        self.wfile.write(b"thanks")

    do_GET = do_POST


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def handle_error(self, request: object, client_address: object) -> None:
        pass  # clients that give up leave broken pipes behind


def _serve(context: ssl.SSLContext | None) -> Iterator[str]:
    httpd = _Server(("127.0.0.1", 0), _CloseDelimited)
    if context is not None:
        httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"{'https' if context else 'http'}://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture(scope="module")
def ca(tmp_path_factory: pytest.TempPathFactory) -> tuple[trustme.CA, Path]:
    authority = trustme.CA()
    path = tmp_path_factory.mktemp("answers-ca") / "ca.pem"
    authority.cert_pem.write_to_path(str(path))
    return authority, path


def _tls_context(cert: trustme.LeafCert) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    cert.configure_cert(context)
    return context


@pytest.fixture(params=["plain", "tls"])
def receiver(request, ca, monkeypatch: pytest.MonkeyPatch, settings) -> Iterator[str]:
    """The close-delimiting receiver, plain and over TLS (a certificate for 127.0.0.1 from the
    trusted test CA)."""
    authority, path = ca
    settings.OUTBOUND_ALLOW_LOOPBACK = True
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(path))
    context = _tls_context(authority.issue_cert("127.0.0.1")) if request.param == "tls" else None
    yield from _serve(context)


def _post(url: str, **kwargs) -> object:
    with GuardedSession() as session:
        return session.send_bytes(
            "POST",
            url,
            body=b'{"id":"e1","type":"message.created","data":{}}' + b" " * 4096,
            headers={"Content-Type": "application/json"},
            allowed_schemes=BOTH,
            **kwargs,
        )


@pytest.mark.parametrize("path", ["/hook", "/unread"])
def test_an_answer_ended_by_closing_the_connection_is_an_answer(receiver: str, path: str) -> None:
    # when a receiver answers 200 without Content-Length and closes the connection
    response = _post(receiver + path)
    # then that is the answer, body and all
    assert (response.status_code, response.content) == (200, b"thanks")
    assert response.headers["Content-Type"] == "text/plain"


def test_a_body_cut_short_after_the_headers_still_answers_with_its_status(receiver: str) -> None:
    # when the receiver announces 100 bytes, sends 6 and closes
    response = _post(receiver + "/short")
    # then the status and headers are the answer, the body is what arrived, marked incomplete
    assert (response.status_code, response.content, response.complete) == (200, b"thanks", False)


def test_a_whole_answer_is_complete(receiver: str) -> None:
    assert _post(receiver + "/hook").complete is True


def test_a_connection_closed_without_an_answer_is_a_connection_error(receiver: str) -> None:
    # when the receiver reads the request and closes the connection without answering
    with pytest.raises(OutboundError) as failed:
        _post(receiver + "/silent")
    # then nothing was answered
    assert failed.value.reason == "connection_error"


def test_the_deadline_still_bounds_a_body_that_never_ends(receiver: str) -> None:
    # when the headers come at once and the body trickles past the call's deadline
    with pytest.raises(OutboundError) as failed:
        _post(receiver + "/slow-body", deadline=1.0)
    # then the call ends at its deadline: the body is still read within it
    assert failed.value.reason == "deadline_exceeded"


def test_the_size_cap_still_holds_over_a_cut_body(receiver: str) -> None:
    with pytest.raises(OutboundError) as failed:
        _post(receiver + "/short", max_bytes=10)  # 100 announced, over the cap
    assert failed.value.reason == "response_too_large"


# --- TLS failures ---------------------------------------------------------------------------------


@pytest.fixture
def trusted(ca, monkeypatch: pytest.MonkeyPatch, settings) -> trustme.CA:
    authority, path = ca
    settings.OUTBOUND_ALLOW_LOOPBACK = True
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(path))
    return authority


def _past() -> tuple[datetime.datetime, datetime.datetime]:
    now = datetime.datetime.now(datetime.UTC)
    return now - datetime.timedelta(days=30), now - datetime.timedelta(days=1)


@pytest.mark.parametrize(
    "case",
    ["other_name", "expired", "unknown_ca", "plain_http_on_https"],
)
def test_a_failed_handshake_or_certificate_is_a_tls_error(case: str, trusted: trustme.CA) -> None:
    # given a receiver whose TLS the client cannot accept
    if case == "other_name":
        context = _tls_context(trusted.issue_cert("receiver.example"))
    elif case == "expired":
        not_before, not_after = _past()
        context = _tls_context(trusted.issue_cert("127.0.0.1", not_before=not_before, not_after=not_after))
    elif case == "unknown_ca":
        context = _tls_context(trustme.CA().issue_cert("127.0.0.1"))
    else:
        context = None
    for base in _serve(context):
        url = base.replace("http://", "https://")
        # when
        with pytest.raises(OutboundError) as failed:
            _post(url + "/hook")
        # then the outcome names TLS, not the connection
        assert failed.value.reason == "tls_error", failed.value.detail


def test_a_peer_that_resets_during_the_handshake_is_a_tls_error(trusted: trustme.CA) -> None:
    # given a listener that takes the connection and closes it at the first byte of the handshake
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def accept_and_close() -> None:
        connection, _ = listener.accept()
        connection.recv(1)
        connection.close()

    thread = threading.Thread(target=accept_and_close, daemon=True)
    thread.start()
    try:
        with pytest.raises(OutboundError) as failed:
            _post(f"https://127.0.0.1:{port}/hook")
    finally:
        thread.join(timeout=5)
        listener.close()
    # then the handshake is what failed
    assert failed.value.reason == "tls_error", failed.value.detail
