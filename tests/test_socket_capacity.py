"""Visitor sockets on the production stack (REDIS_URL), through the Procfile's web process: an idle
socket stays open past Redis's read timeouts, a socket costs the process one file descriptor (its
own TCP connection; the channel layer and the slot bookkeeping share theirs), and a burst of sockets
that connect and leave together frees every slot it took.

The server runs one process (WEB_CONCURRENCY=1, so its pid is uvicorn's) on this test's SQLite copy
and on the suite's Redis database; the visitor budgets that would refuse one client's hundreds of
sockets are off, and so is the per-address cap (each socket leases its session's slot). The clients
connect CONNECTING at a time, so a slow CI machine times out no handshake.
"""

from __future__ import annotations

import asyncio
import os
import time

import pytest

pytestmark = pytest.mark.redis

SOCKETS = 200
PER_SESSION = 10  # apps.chats.visitor.consumers.SOCKETS_PER_SESSION
CONNECTING = 50


def _slot_keys(client) -> list[bytes]:
    return list(client.scan_iter("*slot:ws-*", count=1000))


@pytest.fixture
def redis_client(settings):
    import redis

    client = redis.Redis.from_url(settings.REDIS_URL)
    stale = _slot_keys(client)
    if stale:
        client.delete(*stale)
    yield client
    client.close()


@pytest.fixture
def server(start_server, settings):
    return start_server(
        REDIS_URL=settings.REDIS_URL,
        WEB_CONCURRENCY="1",
        VISITOR_SESSIONS_PER_ADDRESS_PER_HOUR="0",
        VISITOR_SOCKETS_PER_ADDRESS="0",
    )


def _uris(server, count: int) -> list[str]:
    guid = server.seed["button_guid"]
    tokens = [server.visitor_session() for _ in range(-(-count // PER_SESSION))]
    return [f"{server.ws_base}/ws/visitor/{guid}/?session={tokens[n // PER_SESSION]}" for n in range(count)]


async def _open_all(uris: list[str]) -> list:
    import websockets

    gate = asyncio.Semaphore(CONNECTING)

    async def one(uri):
        async with gate:
            return await websockets.connect(uri, open_timeout=30, ping_interval=None)

    return await asyncio.gather(*(one(uri) for uri in uris))


async def _pong(socket) -> bool:
    """True when the socket answers a ping frame (it was not closed by the server meanwhile)."""
    import websockets

    try:
        await socket.send('{"type": "ping"}')
        while True:
            frame = await asyncio.wait_for(socket.recv(), 10)
            if '"pong"' in frame:
                return True
    except (websockets.ConnectionClosed, TimeoutError):
        return False


def _fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def test_idle_visitor_sockets_stay_open_past_redis_read_timeouts(server, redis_client):
    # given 50 visitor sockets open on the real server
    uris = _uris(server, 50)

    async def scenario():
        sockets = await _open_all(uris)
        try:
            assert all([await _pong(socket) for socket in sockets])
            # when they stay idle for longer than twice redis-py's default 5 s read timeout
            await asyncio.sleep(13)
            # then every one of them still answers
            answered = await asyncio.gather(*(_pong(socket) for socket in sockets))
            return sum(1 for ok in answered if not ok)
        finally:
            await asyncio.gather(*(socket.close() for socket in sockets))

    assert asyncio.run(scenario()) == 0, server.output()[-3000:]


def test_a_socket_costs_the_web_process_one_file_descriptor(server, redis_client):
    # given the server warmed up by one socket (its shared Redis connections are open)
    uris = _uris(server, SOCKETS + 1)

    async def scenario():
        warm = await _open_all(uris[:1])
        assert await _pong(warm[0])
        before = _fds(server.proc.pid)
        # when SOCKETS more open and answer
        sockets = await _open_all(uris[1:])
        try:
            assert all(await asyncio.gather(*(_pong(socket) for socket in sockets)))
            return before, _fds(server.proc.pid)
        finally:
            await asyncio.gather(*(socket.close() for socket in [*warm, *sockets]))

    before, after = asyncio.run(scenario())
    # then the process holds one descriptor per socket (its TCP connection) and a handful besides
    assert after - before <= SOCKETS + 10, (before, after)


def test_a_burst_of_sockets_leaving_together_frees_every_slot(server, redis_client):
    # given SOCKETS sockets that connect at once
    uris = _uris(server, SOCKETS)

    async def scenario():
        sockets = await _open_all(uris)
        assert all(await asyncio.gather(*(_pong(socket) for socket in sockets)))
        held = len(_slot_keys(redis_client))
        # when they all leave at once (the clients just drop their connections)
        for socket in sockets:
            socket.transport.abort()
        return held

    held = asyncio.run(scenario())
    assert held == SOCKETS  # its session's slot, per socket
    # then within a few seconds no slot is left taken
    deadline = time.monotonic() + 10
    while _slot_keys(redis_client) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _slot_keys(redis_client) == [], server.output()[-3000:]
