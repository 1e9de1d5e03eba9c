"""apps.core.realtime.push: where a frame is sent from.

Outside the web server's event loop (a Celery worker's task) pushes go through one long-lived event
loop of the process, so channels-redis keeps its connection instead of a new thread, loop and Redis
connection per push; inside the server's `sync_to_async` they go through the server's own loop; the
in-process layer is never used from a foreign loop. A push never raises: a layer that fails or hangs
is logged and given up."""

from __future__ import annotations

import asyncio
import threading
import uuid

import pytest
from asgiref.sync import sync_to_async
from channels.layers import InMemoryChannelLayer

from apps.core import realtime


class _Recording:
    """A layer that records the event loop each group_send ran on."""

    def __init__(self, hang: bool = False, fail: bool = False) -> None:
        self.sent: list[tuple[str, dict, asyncio.AbstractEventLoop]] = []
        self.hang, self.fail = hang, fail

    async def group_send(self, group: str, message: dict) -> None:
        if self.hang:
            await asyncio.sleep(60)
        if self.fail:
            raise ConnectionError("layer down")
        self.sent.append((group, message, asyncio.get_running_loop()))


def _use(monkeypatch, layer) -> None:
    monkeypatch.setattr(realtime, "get_channel_layer", lambda: layer)


def test_pushes_outside_the_server_share_one_long_lived_loop(monkeypatch):
    # given a (non in-process) layer and no server loop in this thread
    layer = _Recording()
    _use(monkeypatch, layer)

    # when three frames are pushed, one of them to two groups
    realtime.push(["chat.1", "widget.1"], {"event": "message", "n": 1})
    realtime.push(["widget.1"], {"event": "message", "n": 2})
    realtime.push(["widget.1"], {"event": "message", "n": 3})

    # then every group got its frame in order, all on one loop that is not this thread's, in one
    # long-lived thread of the process
    assert [(g, m["frame"]["n"]) for g, m, _ in layer.sent] == [
        ("chat.1", 1),
        ("widget.1", 1),
        ("widget.1", 2),
        ("widget.1", 3),
    ]
    loops = {loop for _, _, loop in layer.sent}
    assert len(loops) == 1 and next(iter(loops)).is_running()
    pushers = [t for t in threading.enumerate() if t.name == "realtime-push"]
    assert len(pushers) == 1 and pushers[0] is not threading.current_thread()


def test_a_push_from_the_servers_sync_code_runs_on_the_servers_loop(monkeypatch):
    # given a layer and code running as the ASGI server runs a synchronous view
    layer = _Recording()
    _use(monkeypatch, layer)

    async def server():
        await sync_to_async(realtime.push)(["chat.7"], {"event": "typing"})
        return asyncio.get_running_loop()

    # when
    loop = asyncio.run(server())

    # then the frame went out on the server's loop, not the push thread's
    assert [(group, sent_on) for group, _, sent_on in layer.sent] == [("chat.7", loop)]


def test_the_in_process_layer_is_never_sent_to_from_the_push_loop(monkeypatch):
    # given the embedded default's in-process layer and a push loop that must not be used
    layer = InMemoryChannelLayer()
    _use(monkeypatch, layer)

    def refuse():
        raise AssertionError("the in-process layer was handed to the push loop")

    monkeypatch.setattr(realtime._push_loop, "get", refuse)
    channel = f"test.{uuid.uuid4().hex}"

    async def join():
        await layer.group_add("widget.3", channel)

    asyncio.run(join())

    # when
    realtime.push(["widget.3"], {"event": "chat"})

    # then the frame is in the group's channel
    async def receive():
        return await asyncio.wait_for(layer.receive(channel), 2)

    assert asyncio.run(receive()) == {"type": "push", "frame": {"event": "chat"}}


@pytest.mark.parametrize("kind", ["fail", "hang"])
def test_a_failing_or_hanging_layer_is_logged_and_given_up(monkeypatch, caplog, kind):
    # given a layer that fails or never answers, and a short give-up time
    layer = _Recording(**{kind: True})
    _use(monkeypatch, layer)
    monkeypatch.setattr(realtime, "PUSH_TIMEOUT_SECONDS", 0.2)

    # when
    realtime.push(["chat.9"], {"event": "message"})

    # then the caller goes on, nothing was sent, and the failure is in the log
    assert layer.sent == []
    assert any("websocket push failed" in r.getMessage() for r in caplog.records)


@pytest.mark.redis
def test_on_redis_frames_pushed_from_a_worker_thread_reach_a_socket_on_another_loop(monkeypatch, settings):
    # given the Redis layer (a prefix of this test's own) and a socket's channel joined from its loop
    from channels_redis.core import RedisChannelLayer

    layer = RedisChannelLayer(hosts=[settings.REDIS_URL], prefix=f"test-{uuid.uuid4().hex[:8]}")
    _use(monkeypatch, layer)
    socket_loop = asyncio.new_event_loop()
    try:
        channel = socket_loop.run_until_complete(layer.new_channel())
        socket_loop.run_until_complete(layer.group_add("chat.11", channel))

        # when a worker thread pushes two frames
        worker = threading.Thread(
            target=lambda: [realtime.push(["chat.11"], {"event": "message", "n": n}) for n in (1, 2)]
        )
        worker.start()
        worker.join(timeout=10)

        # then the socket receives both, in order
        async def receive_two():
            return [await asyncio.wait_for(layer.receive(channel), 5) for _ in range(2)]

        frames = socket_loop.run_until_complete(receive_two())
        assert [f["frame"]["n"] for f in frames] == [1, 2]
    finally:
        socket_loop.close()  # channels-redis closes this loop's connections
        push_loop = realtime._push_loop.get()
        if push_loop in layer._layers:  # and the push loop's, on that loop
            asyncio.run_coroutine_threadsafe(layer._layers.pop(push_loop).flush(), push_loop).result(5)
