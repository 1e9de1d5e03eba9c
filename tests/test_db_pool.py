"""The web process's PostgreSQL connection pool (settings DB_POOL_MAX_SIZE, set by scripts/web.sh):
many concurrent requests share at most the pool's connections, which stay open between requests
(no connection set-up per request), and a request that waits too long for one answers 503
`service_unavailable` with Retry-After, never 500."""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor

import psycopg
import pytest
import requests

from tests.live import start_web
from tests.support.concurrency import database_url, direct_connection

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

CONCURRENT = 24


def _backends(conn: psycopg.Connection) -> list[int]:
    """The client backends of the test database other than the watcher's own: their pids."""
    rows = conn.execute(
        "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() "
        "AND backend_type = 'client backend' ORDER BY pid"
    ).fetchall()
    return [row[0] for row in rows]


def _seed(tmp_path) -> dict:
    from django.core.management import call_command

    out = tmp_path / "seed.json"
    with out.open("w") as stream:
        call_command("seed_demo", stdout=stream)
    return json.loads(out.read_text().strip().splitlines()[-1])


def test_concurrent_requests_share_the_pool_and_its_connections_stay_open(tmp_path):
    from django.db import connection

    # given the Procfile's web process on the test database with a pool of 3
    seed = _seed(tmp_path)
    connection.close()  # the test's own connection is not counted
    var = tmp_path / "var"
    var.mkdir()
    server = start_web(var, seed, tmp_path / "web.log", DATABASE_URL=database_url(), DB_POOL_MAX_SIZE="3")
    watcher = direct_connection()
    samples: list[list[int]] = []
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            samples.append(_backends(watcher))
            stop.wait(0.005)

    headers = {"Authorization": f"Bearer {seed['token']}"}

    def get(_):
        return requests.get(server.url("/api/v1/chats?limit=20"), headers=headers, timeout=30).status_code

    try:
        first = get(0)
        before = _backends(watcher)
        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        # when many requests come at once, twice
        with ThreadPoolExecutor(CONCURRENT) as pool:
            statuses = list(pool.map(get, range(CONCURRENT))) + list(pool.map(get, range(CONCURRENT)))
        stop.set()
        sampler.join(timeout=10)
        after = _backends(watcher)
    finally:
        stop.set()
        watcher.close()
        server.terminate()

    # then every request answered; the server never held more than the pool's 3 connections, and the
    # connections after the burst are those it had before it (the pool kept them, nothing reconnected)
    assert first == 200 and statuses == [200] * (2 * CONCURRENT), statuses
    assert samples and max(len(pids) for pids in samples) <= 3, max(len(pids) for pids in samples)
    assert before and set(before) <= {pid for pids in samples for pid in pids}
    assert set(after) >= set(before), (before, after)


def test_a_request_that_cannot_get_a_connection_in_time_answers_503(tmp_path):
    from django.db import connection

    # given a web process whose pool of 1 is taken by a request that waits on a row lock the test holds
    seed = _seed(tmp_path)
    connection.close()
    var = tmp_path / "var"
    var.mkdir()
    server = start_web(
        var,
        seed,
        tmp_path / "web.log",
        DATABASE_URL=database_url(),
        DB_POOL_MAX_SIZE="1",
        DB_POOL_MIN_SIZE="1",
        DB_POOL_TIMEOUT="0.5",
    )
    headers = {"Authorization": f"Bearer {seed['token']}"}
    locker = direct_connection()
    try:
        guid = seed["button_guid"]
        visitor = server.visitor_session()
        posted = requests.post(
            server.url(f"/api/visitor/v1/{guid}/messages"),
            json={"type": "text", "body": "Hello"},
            headers={"Authorization": f"Visitor {visitor}"},
            timeout=30,
        )
        assert posted.status_code == 201, posted.text
        chat_id = requests.get(server.url("/api/v1/chats?limit=1"), headers=headers, timeout=30).json()["data"][0]["id"]
        locker.autocommit = False
        # an operator's message locks its chat's row first: the test holds that lock
        locker.execute("SELECT id FROM chats_chat WHERE id = %s FOR UPDATE", [chat_id])
        blocked = ThreadPoolExecutor(1).submit(
            requests.post,
            server.url(f"/api/v1/chats/{chat_id}/messages"),
            json={"type": "text", "body": "Sent while locked", "agent_id": seed["owner_agent_id"]},
            headers={**headers, "X-Service-Idempotency-Key": "pool-503-holder"},
            timeout=30,
        )
        # when another request needs a connection while the only one is held
        response = _wait_for_refusal(server, headers, blocked)
        locker.rollback()
        held = blocked.result(timeout=30)
    finally:
        locker.close()
        server.terminate()

    # then it is answered 503 service_unavailable with Retry-After, and the held request finishes
    assert response.status_code == 503, response.text
    assert response.headers["Content-Type"] == "application/problem+json"
    assert response.json()["code"] == "service_unavailable"
    assert response.headers["Retry-After"] == "1"
    assert held.status_code in (201, 202), held.text


def _wait_for_refusal(server, headers, blocked) -> requests.Response:
    import time

    deadline = time.monotonic() + 20
    while True:
        response = requests.get(server.url("/api/v1/chats?limit=1"), headers=headers, timeout=30)
        if response.status_code != 200 or time.monotonic() > deadline or blocked.done():
            return response
        time.sleep(0.05)
