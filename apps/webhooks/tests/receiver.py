"""A local HTTPS webhook receiver for tests and benchmarks (no Django needed).

A ThreadingHTTPServer on 127.0.0.1 with TLS from a throw-away trustme CA: point REQUESTS_CA_BUNDLE
at `ca_path` and switch OUTBOUND_ALLOW_LOOPBACK on, and the guarded client reaches it like any
public endpoint. Every complete request is recorded (method, path, headers, raw body, arrival time,
the answer given) when it arrives, before the answer is sent, so a test killing a sender
mid-request still sees what reached the receiver; a request cut off before its whole body arrived
is only counted (`incomplete_requests`), as a real receiver would reject it.

The answer comes from a rule, `rule(hit) -> Reply | int`, called once per request with the hit
(`hit.key_attempt` is the nth request carrying that idempotency key): a status code, a delay, a
redirect, `drop` (close the connection without answering: a transport error for the sender) or
`trickle` (the answer one byte at a time). `connections_open` counts the keep-alive connections
senders have not closed.

In a test:

    with Receiver(rule=fail_first(1)) as rx:
        url = rx.url("/hook")          # https://127.0.0.1:<port>/hook
        ...
        rx.wait_for(2)
        assert rx.hits[1].status == 200

As a process (benchmarks: keeps the receiver's threads off the sender's interpreter lock):
`python -m apps.webhooks.tests.receiver [--delay S]` prints one JSON line `{"port", "ca_path"}`,
serves until its standard input closes, then prints one JSON line per hit
`{"key", "delivery", "path", "at", "status"}` and exits.
"""

from __future__ import annotations

import hashlib
import json
import socket
import ssl
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import trustme

__all__ = ["Hit", "Receiver", "Reply", "always", "fail_first", "flaky", "main"]


@dataclass(frozen=True)
class Reply:
    status: int = 200
    delay: float = 0.0  # seconds to wait before answering (after the request is recorded)
    location: str | None = None  # sent as Location (with a 3xx status: a redirect)
    drop: bool = False  # close the connection without any answer
    trickle: float = 0.0  # write the answer one byte at a time, this many seconds apart
    body: bytes = b"ok"  # the answer's body (text/plain)
    headers: dict[str, str] | None = None  # more headers of the answer (Retry-After, ...)


@dataclass
class Hit:
    seq: int  # arrival order, from 0
    method: str
    path: str
    headers: dict[str, str]  # lower-cased names
    body: bytes
    at: float  # time.time() when the whole request had been read
    key_attempt: int  # 1 for the first request carrying this idempotency key, 2 for the next...
    status: int | None = None  # what was (or is being) answered; None when dropped
    answered_at: float | None = None  # when the answer was written (None: not yet, or dropped)

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())

    @property
    def key(self) -> str | None:
        return self.headers.get("x-service-idempotency-key")

    @property
    def delivery(self) -> str | None:
        return self.headers.get("x-service-delivery")

    def json(self) -> object:
        return json.loads(self.body)


Rule = Callable[[Hit], "Reply | int"]


def always(status: int = 200, *, delay: float = 0.0) -> Rule:
    reply = Reply(status=status, delay=delay)
    return lambda hit: reply


def fail_first(n: int, status: int = 500, *, then: int = 200) -> Rule:
    """The first `n` requests of every idempotency key answer `status`, later ones `then`."""
    return lambda hit: status if hit.key_attempt <= n else then


def flaky(*, salt: str = "", max_failures: int = 3, status: int = 500) -> Rule:
    """About half of the requests fail, deterministically: by a hash of the idempotency key and
    the attempt number; the request after `max_failures` failures in a row always succeeds."""

    def rule(hit: Hit) -> int:
        if hit.key_attempt > max_failures:
            return 200
        digest = hashlib.sha256(f"{salt}{hit.key}:{hit.key_attempt}".encode()).digest()
        return status if digest[0] % 2 else 200

    return rule


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: a pooled sender reuses its connection
    # Headers and body leave in separate writes: with Nagle on, the second waits for the sender's
    # delayed ACK (40 ms per request on Linux).
    disable_nagle_algorithm = True
    timeout = 15  # an idle keep-alive connection holds one thread this long at most
    server: _Server

    def setup(self) -> None:
        self.server.receiver._connection_opened()
        self.request.settimeout(self.timeout)
        try:
            self.request.do_handshake()  # here, in the connection's thread, not in accept()
        except (OSError, ssl.SSLError):
            self.close_connection = True
        super().setup()

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.receiver._connection_closed()

    def log_message(self, format: str, *args: object) -> None:
        pass

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        if len(body) < length:  # the sender died or hung up mid-request: nothing was delivered
            self.server.receiver._incomplete()
            self.close_connection = True
            return
        hit = self.server.receiver._record(self.command, self.path, dict(self.headers.items()), body)
        reply = self.server.receiver._reply_for(hit)
        if reply.delay:
            time.sleep(reply.delay)
        if reply.drop:
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            return
        if reply.trickle:
            self._trickle(reply)
        else:
            self.send_response(reply.status)
            if reply.location is not None:
                self.send_header("Location", reply.location)
            for name, value in (reply.headers or {}).items():
                self.send_header(name, value)
            # 204 and 304 end at their headers (RFC 9110 6.4.1): no content, no Content-Length
            body = b"" if reply.status in (204, 304) else reply.body
            if body or reply.status not in (204, 304):
                self.send_header("Content-Type", "text/plain")
                self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            self.wfile.flush()
        hit.answered_at = time.time()

    def _trickle(self, reply: Reply) -> None:
        raw = f"HTTP/1.1 {reply.status} X\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nok".encode()
        for offset in range(len(raw)):
            self.wfile.write(raw[offset : offset + 1])
            time.sleep(reply.trickle)

    do_POST = do_GET = do_PUT = _serve


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    request_queue_size = 256
    receiver: Receiver

    def handle_error(self, request: object, client_address: object) -> None:
        # Senders that time out, are killed or drop pooled connections leave broken pipes behind.
        pass


@dataclass
class Receiver:
    """See the module docstring. Thread-safe; `hits` is in arrival order."""

    rule: Rule = field(default_factory=always)
    host: str = "127.0.0.1"
    hits: list[Hit] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._arrived = threading.Condition(self._lock)
        self._per_key: dict[str | None, int] = {}
        self.connections_opened = 0
        self.connections_open = 0  # keep-alive connections the senders have not closed yet
        self.incomplete_requests = 0  # cut off before the whole body arrived: not recorded as hits
        self._tmp = tempfile.TemporaryDirectory(prefix="webhook-receiver-")
        self.ca_path = Path(self._tmp.name) / "ca.pem"
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None

    # --- life cycle ---------------------------------------------------------------------------------

    def start(self) -> Receiver:
        ca = trustme.CA()
        ca.cert_pem.write_to_path(str(self.ca_path))
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ca.issue_cert("127.0.0.1", "localhost", "::1").configure_cert(context)
        httpd = _Server((self.host, 0), _Handler)
        httpd.receiver = self
        httpd.socket = context.wrap_socket(httpd.socket, server_side=True, do_handshake_on_connect=False)
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="webhook-receiver", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        self._tmp.cleanup()

    def __enter__(self) -> Receiver:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._httpd is not None, "the receiver is not started"
        return self._httpd.server_address[1]

    def url(self, path: str = "/hook") -> str:
        return f"https://{self.host}:{self.port}{path}"

    # --- recording ----------------------------------------------------------------------------------

    def _connection_opened(self) -> None:
        with self._lock:
            self.connections_opened += 1
            self.connections_open += 1

    def _incomplete(self) -> None:
        with self._lock:
            self.incomplete_requests += 1

    def _connection_closed(self) -> None:
        with self._lock:
            self.connections_open -= 1

    def _record(self, method: str, path: str, headers: dict[str, str], body: bytes) -> Hit:
        lowered = {name.lower(): value for name, value in headers.items()}
        with self._arrived:
            key = lowered.get("x-service-idempotency-key")
            self._per_key[key] = self._per_key.get(key, 0) + 1
            hit = Hit(
                seq=len(self.hits),
                method=method,
                path=path,
                headers=lowered,
                body=body,
                at=time.time(),
                key_attempt=self._per_key[key],
            )
            self.hits.append(hit)
            self._arrived.notify_all()
        return hit

    def _reply_for(self, hit: Hit) -> Reply:
        try:
            reply = self.rule(hit)
        except Exception:  # a broken rule must show up as a failure, not hang the sender
            reply = Reply(status=599)
        if isinstance(reply, int):
            reply = Reply(status=reply)
        hit.status = None if reply.drop else reply.status
        return reply

    def wait_for(self, count: int, timeout: float = 10.0) -> list[Hit]:
        """Block until at least `count` requests have arrived; returns a copy of the hits."""
        deadline = time.monotonic() + timeout
        with self._arrived:
            while len(self.hits) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"the receiver saw {len(self.hits)} requests, expected {count}")
                self._arrived.wait(left)
            return list(self.hits)

    def snapshot(self) -> list[Hit]:
        with self._lock:
            return list(self.hits)

    def reset(self) -> None:
        with self._lock:
            self.hits.clear()
            self._per_key.clear()

    def paths(self) -> list[str]:
        return [hit.path for hit in self.snapshot()]


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--delay", type=float, default=0.0, help="seconds before each answer")
    args = parser.parse_args(argv)
    with Receiver(rule=always(200, delay=args.delay)) as receiver:
        print(json.dumps({"port": receiver.port, "ca_path": str(receiver.ca_path)}), flush=True)
        sys.stdin.read()  # serve until the parent closes our standard input
        for hit in receiver.snapshot():
            line = {"key": hit.key, "delivery": hit.delivery, "path": hit.path, "at": hit.at, "status": hit.status}
            sys.stdout.write(json.dumps(line) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
