"""Unread streams against the web process as `make run` starts it (the Procfile's `web`): clients
that ask for a large body and never read it must not hold the process's request threads, so every
other request is still answered at once. A client's small receive window keeps the server's writes
from draining into the kernel's buffers, as a slow or stalled reader across the internet does.
"""

from __future__ import annotations

import hashlib
import os
import socket
import time
from urllib.parse import urlsplit

import pytest
import requests

pytestmark = [pytest.mark.embedded, pytest.mark.django_db]  # django_db: the plugin's autouse fixtures want it

FILE_BYTES = 9 * 1024 * 1024
UNREAD = 6  # more than the process's WEB_THREADS (4)


def _unread_get(port: int, target: str) -> socket.socket:
    """A GET whose answer is not read: only its first bytes, once they come."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", port))
    sock.sendall(f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
    return sock


def test_unread_downloads_of_a_large_file_leave_other_requests_answered(start_server):
    server = start_server()
    auth = {"Authorization": f"Bearer {server.seed['token']}"}
    content = os.urandom(FILE_BYTES)
    uploaded = requests.post(
        server.url("/api/v1/files"),
        files={"file": ("big.bin", content, "application/octet-stream")},
        headers={**auth, "X-Service-Idempotency-Key": "big-file"},
        timeout=60,
    )
    assert uploaded.status_code == 201, uploaded.text
    found = requests.get(server.url(f"/api/v1/files/{uploaded.json()['id']}"), headers=auth, allow_redirects=False)
    assert found.status_code == 302, found.text
    location = urlsplit(found.headers["Location"])
    target = f"{location.path}?{location.query}" if location.query else location.path

    sockets = [_unread_get(server.port, target) for _ in range(UNREAD)]
    try:
        for n, sock in enumerate(sockets):
            sock.settimeout(30)
            try:
                first = sock.recv(12)
            except TimeoutError:
                pytest.fail(f"download {n + 1} did not start: the request threads are held by unread ones")
            assert first == b"HTTP/1.1 200", first
        started = time.monotonic()
        try:
            config = requests.get(server.url(f"/api/visitor/v1/{server.seed['button_guid']}/config"), timeout=15)
            chats = requests.get(server.url("/api/v1/chats"), headers=auth, timeout=15)
        except requests.Timeout:
            pytest.fail(f"{UNREAD} unread downloads left other requests unanswered")
        seconds = time.monotonic() - started
        print(f"{UNREAD} unread downloads of {FILE_BYTES} bytes; config and chat list answered in {seconds:.3f} s")
        assert config.status_code == 200 and chats.status_code == 200
        assert seconds < 5.0, f"other requests took {seconds:.1f} s behind {UNREAD} unread downloads"

        # A reader that comes back gets every byte.
        body = requests.get(server.url(target), timeout=60)
        assert body.status_code == 200
        assert hashlib.sha256(body.content).digest() == hashlib.sha256(content).digest()
    finally:
        for sock in sockets:
            sock.close()
    assert requests.get(server.url("/healthz"), timeout=15).status_code == 200
    assert "Traceback" not in server.output(), server.output()[-3000:]
