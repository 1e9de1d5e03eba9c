"""apps.platform.webserver: the web's several processes under uvicorn's supervisor, each with its own
listening socket (scripts/web.sh above one process; the live test of two serving processes is in
tests/test_web_concurrency.py)."""

from __future__ import annotations

import socket
import subprocess
import sys
import textwrap

import pytest

from apps.platform import webserver
from tests.live import ROOT


def _run(*args: str, cwd=ROOT, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "apps.platform.webserver", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_uvicorns_options_make_uvicorns_config():
    config = webserver.uvicorn_config(
        [
            "config.asgi:application",
            "--workers",
            "3",
            "--host",
            "127.0.0.1",
            "--port",
            "9",
            "--no-access-log",
            "--proxy-headers",
            "--forwarded-allow-ips",
            "10.0.0.1",
            "--header",
            "X-Served-By:web",
            "--timeout-keep-alive",
            "75",
            "--ws-per-message-deflate",
            "false",
        ]
    )
    assert (config.app, config.workers, config.host, config.port) == ("config.asgi:application", 3, "127.0.0.1", 9)
    assert config.access_log is False and config.proxy_headers is True
    assert config.forwarded_allow_ips == "10.0.0.1"
    assert ["X-Served-By", "web"] in [list(header) for header in config.headers]
    assert config.timeout_keep_alive == 75 and config.ws_per_message_deflate is False


def test_an_unknown_option_is_refused_as_uvicorn_refuses_it():
    done = _run("config.asgi:application", "--workers", "2", "--no-such-option")
    assert done.returncode == 2
    assert "No such option '--no-such-option'" in done.stderr


def test_help_is_uvicorns():
    done = _run("--help")
    assert done.returncode == 0
    assert "--forwarded-allow-ips" in done.stdout


@pytest.mark.parametrize("extra", [["--workers", "1"], ["--workers", "2", "--reload"]])
def test_one_process_or_reloading_is_left_to_uvicorn(extra):
    done = _run("config.asgi:application", "--port", "0", *extra)
    assert done.returncode == 1
    assert "runs 2 or more processes" in done.stderr


def test_an_address_in_use_stops_the_start():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = _run("config.asgi:application", "--workers", "2", "--host", "127.0.0.1", "--port", str(port))
    assert done.returncode == 3
    assert "Address already in use" in done.stderr


def test_a_process_that_fails_to_start_stops_them_all_with_uvicorns_code(tmp_path):
    # given an application whose start (the lifespan protocol) fails
    (tmp_path / "failing.py").write_text(
        textwrap.dedent(
            """
            async def app(scope, receive, send):
                assert scope["type"] == "lifespan"
                await receive()
                await send({"type": "lifespan.startup.failed", "message": "no database"})
            """
        )
    )
    done = _run("failing:app", "--app-dir", str(tmp_path), "--workers", "2", "--port", "0", "--lifespan", "on")
    # then the supervisor stops instead of restarting it forever, with uvicorn's start-up failure code
    assert done.returncode == 3, done.stderr[-2000:]
    assert "failed to start" in done.stderr
