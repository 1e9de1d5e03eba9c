"""A bounded abuse run against the web process as `make run` starts it (the Procfile's `web`), run by
CI in both suite runs: oversized and chunked bodies, query floods, deeply nested JSON, websocket frame
floods and oversized frames. It fails on any 5xx and on server memory growth over 100 MB. Bounded:
a few hundred requests and frames, each with a timeout.
"""

from __future__ import annotations

import asyncio
import json
import socket

import pytest
import requests

pytestmark = [pytest.mark.embedded, pytest.mark.django_db]  # django_db: the plugin's autouse fixtures want it

RSS_GROWTH_LIMIT_KIB = 100 * 1024


def _raw(port: int, head: str, body: bytes = b"") -> int:
    """Send a raw HTTP/1.1 request and return the answer's status (0 when the server hung up).

    A server that refuses a body before it has all of it may answer and close while the rest is still
    being sent; the client then sees a reset on its send, and on its read the answer or another reset.
    """
    with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
        try:
            conn.sendall(head.encode() + body)
        except OSError:
            pass  # the server stopped reading: its answer, if any, is read below
        try:
            line = conn.recv(64).decode(errors="replace")
        except OSError:
            return 0
    return int(line.split()[1]) if line.startswith("HTTP/1.1 ") else 0


def test_a_bounded_abuse_run_finds_no_5xx_and_no_memory_growth(start_server):
    server = start_server()
    port = int(server.base.rsplit(":", 1)[1])
    guid = server.seed["button_guid"]
    token = server.visitor_session()
    before = server.rss_kib()
    statuses: list[tuple[str, int]] = []

    # bodies: declared far over the limit (nothing sent), chunked past the limit, a bad length
    sessions = f"/api/visitor/v1/{guid}/sessions"
    for _ in range(5):
        statuses.append(
            ("declared 1 GiB", _raw(port, f"POST {sessions} HTTP/1.1\r\nHost: x\r\nContent-Length: {1024**3}\r\n\r\n"))
        )
    chunk = b"a" * (1024 * 1024)
    chunked = b"".join(b"%x\r\n%s\r\n" % (len(chunk), chunk) for _ in range(12)) + b"0\r\n\r\n"
    head = (
        f"POST {sessions} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    for _ in range(3):
        statuses.append(("chunked 12 MB", _raw(port, head, chunked)))
    statuses.append(("length ²", _raw(port, f"POST {sessions} HTTP/1.1\r\nHost: x\r\nContent-Length: ²\r\n\r\n")))

    # query floods, with and without a token, on public and authenticated routes
    flood = "&".join(f"p{n}=1" for n in range(1500))
    for path in (f"/api/visitor/v1/{guid}/config", "/api/v1/chats", f"/api/visitor/v1/{guid}/messages"):
        response = requests.get(
            server.url(f"{path}?{flood}"), headers={"Authorization": f"Visitor {token}"}, timeout=10
        )
        statuses.append((f"query flood {path}", response.status_code))

    # deeply nested JSON
    for depth in (1000, 50_000):
        response = requests.post(
            server.url(sessions),
            data="[" * depth + "]" * depth,
            headers={"Content-Type": "application/json"},
            timeout=10,
        )
        statuses.append((f"json depth {depth}", response.status_code))

    # websocket: a frame flood (valid, malformed, binary) and oversized frames
    async def sockets() -> None:
        import websockets

        uri = f"{server.ws_base}/ws/visitor/{guid}/?session={token}"
        for kind in ("flood", "oversized"):
            try:
                async with websockets.connect(uri, open_timeout=5, max_size=None) as ws:
                    if kind == "flood":
                        for n in range(200):
                            await ws.send(["not json", b"\x00\x01", json.dumps({"type": "ping"}), "[" * 3000][n % 4])
                    else:
                        for _ in range(5):
                            await ws.send("x" * (2 * 1024 * 1024))
                    await asyncio.wait_for(ws.recv(), timeout=3)
            except Exception:  # closed by policy (1008/1009) is the expected end
                continue

    asyncio.run(sockets())

    # then nothing answered 5xx, the server still answers, and it did not grow by 100 MB
    errors = [(what, status) for what, status in statuses if status >= 500]
    assert not errors, errors
    assert requests.get(server.url("/healthz"), timeout=10).status_code == 200
    grown = server.rss_kib() - before
    print(f"abuse run: {len(statuses)} requests, server RSS {before // 1024} MB -> {(before + grown) // 1024} MB")
    assert grown < RSS_GROWTH_LIMIT_KIB, f"server RSS grew by {grown // 1024} MB"
    assert "Traceback" not in server.output(), server.output()[-3000:]
