"""The web topology (scripts/web.sh, the Procfile's `web`): how many processes it starts, and that
websockets and presence work across processes with REDIS_URL (channels-redis, presence in Redis).

The first tests run scripts/web.sh with stand-ins for `uvicorn` and `python` first on PATH that print
the arguments they were given, so they read the decision without starting a server. The last one starts the Procfile's
web command twice, as two processes on PostgreSQL and Redis, and puts the visitor on one and the
operator on the other.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import os
import re
import subprocess
from concurrent.futures import ThreadPoolExecutor
from importlib import import_module
from pathlib import Path

import pytest
import requests

from tests.live import ROOT, read_proc, start_web

WEB_SH = ROOT / "scripts" / "web.sh"
# every start of the web process runs the lifespan protocol, sends frames uncompressed and keeps idle
# connections open longer than the proxy in front does
SERVER_FLAGS = "--lifespan on --timeout-keep-alive 75 --ws-per-message-deflate false"
# above one process: uvicorn's supervisor with a listening socket per process
SEVERAL = "python -m apps.platform.webserver"


def _decide(tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    fake = tmp_path / "bin"
    fake.mkdir(exist_ok=True)
    for name in ("uvicorn", "python"):
        (fake / name).write_text(f'#!/bin/sh\necho "{name} $*"\n')
        (fake / name).chmod(0o755)
    base = {k: v for k, v in os.environ.items() if k not in {"WEB_CONCURRENCY", "REDIS_URL"}}
    base["PATH"] = f"{fake}{os.pathsep}{base.get('PATH', '')}"
    base.update(env)
    return subprocess.run([str(WEB_SH), "--port", "9"], env=base, capture_output=True, text=True, timeout=30)


def test_the_embedded_default_is_one_process_without_the_supervisor(tmp_path):
    done = _decide(tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"uvicorn config.asgi:application {SERVER_FLAGS} --port 9"


def test_with_redis_the_default_is_one_process_per_core(tmp_path):
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    nproc = int(subprocess.run(["nproc"], capture_output=True, text=True).stdout)
    assert nproc == cores
    done = _decide(tmp_path, REDIS_URL="redis://127.0.0.1:1/0")
    assert done.returncode == 0, done.stderr
    expected = f"uvicorn config.asgi:application {SERVER_FLAGS} --port 9"
    if nproc > 1:
        expected = f"{SEVERAL} config.asgi:application --workers {nproc} {SERVER_FLAGS} --port 9"
    assert done.stdout.strip() == expected


@pytest.mark.parametrize(("value", "workers"), [("1", None), ("2", "2"), ("5", "5"), ("03", "3")])
def test_web_concurrency_sets_the_process_count_with_redis(tmp_path, value, workers):
    done = _decide(tmp_path, REDIS_URL="redis://127.0.0.1:1/0", WEB_CONCURRENCY=value)
    assert done.returncode == 0, done.stderr
    command = f"{SEVERAL} config.asgi:application --workers {workers}" if workers else "uvicorn config.asgi:application"
    assert done.stdout.strip() == f"{command} {SERVER_FLAGS} --port 9"


def test_several_processes_without_redis_are_refused_with_the_reason(tmp_path):
    done = _decide(tmp_path, WEB_CONCURRENCY="2")
    assert done.returncode == 2
    assert done.stdout == ""  # no server started
    assert "needs REDIS_URL" in done.stderr and "in-process" in done.stderr


@pytest.mark.parametrize("value", ["0", "two", "-1", "1.5", " "])
def test_a_bad_web_concurrency_is_refused(tmp_path, value):
    done = _decide(tmp_path, REDIS_URL="redis://127.0.0.1:1/0", WEB_CONCURRENCY=value)
    assert done.returncode == 2, done.stdout
    assert done.stdout == ""
    assert "WEB_CONCURRENCY" in done.stderr


# --- across processes, for real ------------------------------------------------------------------------


def _operator_session_key(user) -> str:
    """A logged-in Django session of `user`, as the console's login leaves one."""
    from django.conf import settings
    from django.contrib import auth

    store = import_module(settings.SESSION_ENGINE).SessionStore()
    store[auth.SESSION_KEY] = str(user.pk)
    store[auth.BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
    store[auth.HASH_SESSION_KEY] = user.get_session_auth_hash()
    store.create()
    return store.session_key


def _online(server, token: str, agent_id: int) -> bool:
    response = requests.get(
        server.url(f"/api/v1/agents/{agent_id}"), headers={"Authorization": f"Bearer {token}"}, timeout=10
    )
    assert response.status_code == 200, response.text
    return response.json()["online"]


def _wait_online(server, token: str, agent_id: int, expected: bool, timeout: float = 10) -> bool:
    import time

    deadline = time.monotonic() + timeout
    while True:
        state = _online(server, token, agent_id)
        if state == expected or time.monotonic() > deadline:
            return state
        time.sleep(0.1)


@pytest.mark.postgres
@pytest.mark.redis
@pytest.mark.django_db(transaction=True)
def test_a_visitor_and_an_operator_on_two_web_processes_talk_and_see_presence(tmp_path):
    import websockets
    from django.conf import settings
    from django.core.management import call_command

    from apps.core.models import Widget
    from tests.support.concurrency import database_url

    # given the test database seeded (committed: the servers read it) and two web processes started by
    # the Procfile's command on it, sharing Redis
    out = tmp_path / "seed.json"
    with out.open("w") as stream:
        call_command("seed_demo", stdout=stream)
    seed = json.loads(out.read_text().strip().splitlines()[-1])
    env = {
        "DATABASE_URL": database_url(),
        "REDIS_URL": settings.REDIS_URL,
        "WEB_CONCURRENCY": "1",
        "VISITOR_SESSIONS_PER_ADDRESS_PER_HOUR": "0",
        "VISITOR_MESSAGES_PER_ADDRESS_PER_MINUTE": "0",
    }
    servers = []
    for name in ("a", "b"):
        var = tmp_path / f"var-{name}"
        var.mkdir()
        servers.append(start_web(var, seed, tmp_path / f"web-{name}.log", **env))
    operator_server, visitor_server = servers
    try:
        assert operator_server.proc.pid != visitor_server.proc.pid
        widget = Widget.objects.get(pk=seed["widget_id"])
        session_key = _operator_session_key(widget.account.user)
        token, agent_id, guid = seed["token"], seed["owner_agent_id"], seed["button_guid"]
        visitor_token = visitor_server.visitor_session()
        assert _online(visitor_server, token, agent_id) is False

        async def exchange() -> tuple[dict, dict, bool, bool]:
            operator_uri = f"{operator_server.ws_base}/ws/agent/?widget={seed['widget_id']}"
            headers = {"Cookie": f"{settings.SESSION_COOKIE_NAME}={session_key}", "Origin": operator_server.base}
            async with websockets.connect(operator_uri, additional_headers=headers, open_timeout=10) as operator:
                ready = json.loads(await asyncio.wait_for(operator.recv(), 10))
                assert ready["event"] == "ready", ready
                # presence is read on the other process
                online = await asyncio.to_thread(_wait_online, visitor_server, token, agent_id, True)
                visitor_uri = f"{visitor_server.ws_base}/ws/visitor/{guid}/?session={visitor_token}"
                async with websockets.connect(visitor_uri, open_timeout=10) as visitor:
                    # the visitor writes through process B; the operator's socket on A hears it
                    posted = await asyncio.to_thread(
                        requests.post,
                        visitor_server.url(f"/api/visitor/v1/{guid}/messages"),
                        json={"type": "text", "body": "Hello from process B"},
                        headers={"Authorization": f"Visitor {visitor_token}"},
                        timeout=10,
                    )
                    assert posted.status_code == 201, posted.text
                    heard = await _next_message(operator, "Hello from process B")
                    # the operator answers through process A; the visitor's socket on B hears it
                    answered = await asyncio.to_thread(
                        requests.post,
                        operator_server.url(f"/api/v1/chats/{heard['chat_id']}/messages"),
                        json={"type": "text", "body": "Hello from process A", "agent_id": agent_id},
                        headers={"Authorization": f"Bearer {token}", "X-Service-Idempotency-Key": "cross-process-1"},
                        timeout=10,
                    )
                    assert answered.status_code in (201, 202), answered.text
                    answer = await _next_message(visitor, "Hello from process A")
            # the operator's only socket closed on A: B reads the agent offline
            offline = await asyncio.to_thread(_wait_online, visitor_server, token, agent_id, False)
            return heard, answer, online, offline

        heard, answer, online, offline = asyncio.run(exchange())
    finally:
        for server in servers:
            server.terminate()

    # then each side received the other's message across processes, and presence followed the socket
    assert heard["message"]["author"]["kind"] == "client"
    assert answer["chat_id"] == heard["chat_id"]
    assert answer["message"]["author"]["kind"] != "client"
    assert online is True
    assert offline is False


async def _next_message(socket_, body: str) -> dict:
    while True:
        frame = json.loads(await asyncio.wait_for(socket_.recv(), 10))
        if frame.get("event") == "message" and frame["message"]["body"] == body:
            return frame


def _children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(child) for child in read_proc(task / "children").split()]
    return found


def _serving_workers(pid: int) -> list[int]:
    """uvicorn's workers (multiprocessing spawn children), not multiprocessing's resource tracker."""
    return [child for child in _children(pid) if "spawn_main" in read_proc(Path(f"/proc/{child}/cmdline"))]


LISTEN, ESTABLISHED = "0A", "01"


def _sockets(pid: int, port: int, state: str) -> set[int]:
    """The inodes of the TCP sockets process `pid` holds on local `port` in `state` (/proc/net/tcp)."""
    inodes = set()
    for table in ("tcp", "tcp6"):
        for row in read_proc(Path(f"/proc/{pid}/net/{table}")).splitlines()[1:]:
            fields = row.split()
            if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] == state:
                inodes.add(int(fields[9]))
    held = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            held.add(os.readlink(fd))
        except FileNotFoundError:  # closed between the listing and the read
            pass
    return {inode for inode in inodes if f"socket:[{inode}]" in held}


def _kept_alive(port: int) -> http.client.HTTPConnection:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    connection.request("GET", "/healthz")
    response = connection.getresponse()
    response.read()
    assert response.status == 200
    return connection


def _running(pid: int) -> bool:
    """A live process (not gone, not a zombie waiting for a reaper)."""
    import time

    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            return False
        if state == "Z":
            return False
        time.sleep(0.1)
    return True


@pytest.mark.redis
def test_web_concurrency_two_runs_two_serving_processes_that_stop_together(start_server):
    from django.conf import settings

    # given the Procfile's web with WEB_CONCURRENCY=2 and Redis
    server = start_server(WEB_CONCURRENCY="2", REDIS_URL=settings.REDIS_URL)
    # then uvicorn's supervisor holds two worker processes, and they serve
    workers = _serving_workers(server.proc.pid)
    helpers = _children(server.proc.pid)
    assert len(workers) == 2, server.output()[-2000:]
    assert all(requests.get(server.url("/healthz"), timeout=10).status_code == 200 for _ in range(20))
    # each from a listening socket of its own on the one port
    listeners = [_sockets(pid, server.port, LISTEN) for pid in workers]
    assert [len(found) for found in listeners] == [1, 1]
    assert listeners[0] != listeners[1]
    # and 20 connections opened at once are kept by both (all in one: a chance of 2 in 2**20)
    with ThreadPoolExecutor(20) as pool:
        connections = list(pool.map(lambda _: _kept_alive(server.port), range(20)))
    held = [len(_sockets(pid, server.port, ESTABLISHED)) for pid in workers]
    for connection in connections:
        connection.close()
    assert sum(held) == 20 and min(held) >= 1, held
    # and SIGTERM to the group (as honcho stops it) stops the supervisor and both workers
    server.terminate(timeout=20)
    assert server.proc.returncode is not None
    assert not [pid for pid in helpers if _running(pid)]


def test_idle_connections_outlive_the_proxys_kept_alive_ones(tmp_path):
    # given the proxy configuration shipped in deploy/ and the web process's own flags
    conf = (ROOT / "deploy" / "nginx" / "chatwidget.conf").read_text()
    upstream = conf[conf.index("upstream chatwidget_web {") :]
    upstream = upstream[: upstream.index("}")]
    proxy_idle = int(re.search(r"^\s*keepalive_timeout\s+(\d+)s;", upstream, re.MULTILINE).group(1))
    done = _decide(tmp_path)
    web_idle = int(re.search(r"--timeout-keep-alive (\d+)", done.stdout).group(1))
    # then nginx always closes an idle connection first, never sending on one the service is closing
    assert web_idle > proxy_idle
