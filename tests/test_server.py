"""The web process as `make run` starts it (the Procfile's `web` command, run as it is written), on the
embedded default: what only the real ASGI server shows. Forged proxy headers do not move the visitor's
address, no credential reaches its log, and frames over the application's limit are refused by the
server before they are read whole.
"""

import asyncio
import json
import os
import re
import shlex
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

pytestmark = pytest.mark.embedded

ROOT = Path(__file__).resolve().parents[1]
VENV_BIN = Path(sys.executable).parent


def _procfile_web_command(port: int) -> list[str]:
    for line in (ROOT / "Procfile").read_text().splitlines():
        if line.startswith("web:"):
            command = line.split(":", 1)[1].strip().replace("${PORT:-8000}", str(port))
            command = command.replace("${WEB_HOST:-127.0.0.1}", "127.0.0.1")
            return shlex.split(command)
    raise AssertionError("Procfile has no web process")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


_START_SESSION = (
    "from apps.chats.visitor import services; from apps.core.models import Widget; "
    "print(services.start_session(widget=Widget.objects.get(button_guid='{guid}'))[1])"
)


@pytest.fixture(scope="module")
def server(tmp_path_factory, live_template):
    """A copy of the migrated embedded database with the demo widget, and the Procfile's web process on it."""
    var = live_template.copy(tmp_path_factory.mktemp("server"))
    # As `make run` starts it: the development default, no DEBUG, DATABASE_URL or REDIS_URL given.
    dropped = ("DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE", "APP_MODE", "DEBUG")
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    env.update(
        VAR_DIR=str(var),
        DJANGO_SETTINGS_MODULE="config.settings",
        VISITOR_SESSIONS_PER_ADDRESS_PER_HOUR="2",
        PATH=f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}",
    )
    python = str(VENV_BIN / "python")
    seeded = live_template.seed
    guid = seeded["button_guid"]
    session = subprocess.run(
        [python, "manage.py", "shell", "-c", _START_SESSION.format(guid=guid)],
        cwd=ROOT,
        env=env,
        check=True,
        timeout=120,
        capture_output=True,
        text=True,
    )
    token = session.stdout.strip().splitlines()[-1]
    port = _free_port()
    log = var / "web.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(_procfile_web_command(port), cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
        base = f"http://127.0.0.1:{port}"
        for _ in range(300):
            try:
                urllib.request.urlopen(f"{base}/healthz", timeout=2)
                break
            except (urllib.error.URLError, ConnectionError, OSError):
                if process.poll() is not None:
                    raise AssertionError(log.read_text()) from None
                time.sleep(0.1)
        try:
            yield {
                "base": base,
                "port": port,
                "guid": guid,
                "log": log,
                "token": token,
                "api_token": seeded["token"],
            }
        finally:
            process.terminate()
            process.wait(timeout=20)


def _post(url: str, body: dict, headers: dict | None = None) -> int:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json", **(headers or {})}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


def test_a_forged_x_forwarded_for_does_not_reset_the_per_address_budget(server):
    # given a budget of 2 visitor sessions per address per hour and TRUSTED_PROXY_HOPS=0 (the default)
    url = f"{server['base']}/api/visitor/v1/{server['guid']}/sessions"
    # when one client sends 4, each with another forged X-Forwarded-For
    statuses = [_post(url, {}, {"X-Forwarded-For": f"203.0.113.{n}"}) for n in range(1, 5)]
    # then the server kept the peer address: the third and fourth are refused
    assert statuses == [201, 201, 429, 429]


def test_no_visitor_token_reaches_the_server_log_from_a_websocket_handshake(server):
    import websockets

    secret = server["token"]

    async def knock():
        uri = f"ws://127.0.0.1:{server['port']}/ws/visitor/{server['guid']}/?session={secret}&since=0"
        try:
            async with websockets.connect(uri, open_timeout=5) as socket_:
                await asyncio.wait_for(socket_.recv(), timeout=2)
        except Exception:  # refused handshake or closed socket: only the log matters here
            return

    asyncio.run(knock())
    time.sleep(0.3)
    text = server["log"].read_text()
    assert "/ws/visitor/" in text, "the handshake was not logged at all: the test saw nothing"
    assert secret not in text
    assert not re.search(r"session=cvs_\w", text)
    assert secret[:12] not in text


def test_the_server_refuses_a_frame_far_over_the_application_limit(server):
    import websockets

    async def oversized() -> str:
        uri = f"ws://127.0.0.1:{server['port']}/ws/visitor/{server['guid']}/?session={server['token']}"
        try:
            async with websockets.connect(uri, open_timeout=5, max_size=None) as socket_:
                await socket_.send("x" * (1024 * 1024))
                await asyncio.wait_for(socket_.recv(), timeout=5)
        except websockets.ConnectionClosed as exc:
            return f"closed {exc.rcvd.code if exc.rcvd else None}"
        except websockets.InvalidStatus as exc:
            return f"refused {exc.response.status_code}"
        return "read"

    outcome = asyncio.run(oversized())
    # the server closes with 1009 (message too big) instead of reading a megabyte into memory
    assert outcome == "closed 1009", outcome


def test_a_socket_offering_compression_is_answered_without_it(server):
    """Frames go uncompressed (scripts/web.sh): a browser offers permessage-deflate on every socket,
    and accepting it would keep a zlib compressor and decompressor per socket."""
    import websockets

    async def handshake():
        uri = f"ws://127.0.0.1:{server['port']}/ws/visitor/{server['guid']}/?session={server['token']}"
        async with websockets.connect(uri, open_timeout=5, compression="deflate") as socket_:
            offered = socket_.request.headers.get("Sec-WebSocket-Extensions")
            return offered, socket_.response.headers.get("Sec-WebSocket-Extensions"), socket_.protocol.extensions

    offered, accepted, extensions = asyncio.run(handshake())
    assert offered and "permessage-deflate" in offered
    assert accepted is None and extensions == []


def _get(url: str, headers: dict | None = None) -> tuple[int, str]:
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read().decode(errors="replace")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(errors="replace")


def test_make_runs_default_shows_no_technical_error_pages(server):
    # an unknown page and a forged Host header: plain pages, no URL patterns, paths or settings
    for url, headers, expected in (
        (f"{server['base']}/no-such-page", {}, 404),
        (f"{server['base']}/api/v1/no-such-route", {}, 404),
        (f"{server['base']}/healthz", {"Host": "evil.example"}, 400),
    ):
        status, body = _get(url, headers)
        assert status == expected, (url, status)
        for leak in ("URLconf", "Traceback", "DisallowedHost", str(ROOT), "SECRET_KEY", "settings.py"):
            assert leak not in body, (url, leak)


def test_the_api_docs_and_their_static_files_serve_without_debug(server):
    status, page = _get(f"{server['base']}/api/docs/")
    assert status == 200
    asset = re.search(r'(/static/[^"]+swagger-ui[^"]*\.css)', page)
    assert asset, page[:500]
    assert _get(f"{server['base']}{asset.group(1)}")[0] == 200


def test_a_declared_body_over_the_limit_is_refused_before_it_is_sent(server):
    # a client that declares 1 GiB and sends nothing yet is answered 413 at once
    with socket.create_connection(("127.0.0.1", server["port"]), timeout=10) as conn:
        conn.sendall(
            f"POST /api/visitor/v1/{server['guid']}/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            f"Content-Type: application/json\r\nContent-Length: {1024**3}\r\n\r\n".encode()
        )
        head = conn.recv(4096).decode(errors="replace")
    assert head.startswith("HTTP/1.1 413"), head[:200]
    assert "application/problem+json" in head


def test_a_chunked_json_body_is_read_whole(server):
    import http.client

    body = json.dumps({"name": "Chunked Name"}).encode()
    conn = http.client.HTTPConnection("127.0.0.1", server["port"], timeout=10)
    conn.request(
        "PATCH",
        "/api/v1/account",
        body=iter([body[:5], body[5:]]),
        headers={
            "Content-Type": "application/json",
            "Authorization": f"Bearer {server['api_token']}",
            "X-Service-Idempotency-Key": "chunked-account-patch",
        },
        encode_chunked=True,
    )
    response = conn.getresponse()
    answer = json.loads(response.read())
    conn.close()
    assert response.status == 200, answer
    assert answer["name"] == "Chunked Name"  # the fields sent in chunks were read


def test_the_server_ran_the_applications_start(server):
    """The Procfile's web runs the ASGI lifespan protocol (scripts/web.sh), and config.asgi's
    ServerStart completed it: a failed start would have stopped the server."""
    log = server["log"].read_text()
    assert "Waiting for application startup." in log
    assert "Application startup complete." in log
    assert "lifespan" not in log.lower()  # uvicorn names the protocol only when it is unsupported or failed
