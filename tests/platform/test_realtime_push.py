"""apps.platform.realtime.push / group_send: the one way synchronous code sends to websocket groups.

In a web process a push runs on the server's own loop (the in-process layer's queues belong to it);
elsewhere a Redis layer's pushes run on one loop of the process's own, and the in-process layer's
on the caller's (`async_to_sync`). A push never raises: a layer that fails or hangs is logged and
given up."""

from __future__ import annotations

import asyncio
import threading
import uuid

import pytest
from asgiref.sync import sync_to_async
from channels.layers import InMemoryChannelLayer

from apps.platform import realtime


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


def test_a_push_sends_the_frame_to_every_group_in_order(monkeypatch):
    layer = _Recording()
    _use(monkeypatch, layer)

    realtime.push(["chat.1", "widget.1"], {"event": "message", "n": 1})
    realtime.push(["widget.1"], {"event": "message", "n": 2})

    assert [(g, m["type"], m["frame"]["n"]) for g, m, _ in layer.sent] == [
        ("chat.1", "push", 1),
        ("widget.1", "push", 1),
        ("widget.1", "push", 2),
    ]


def test_a_push_from_the_servers_sync_code_runs_on_the_servers_loop(monkeypatch):
    # given a layer and code running as the ASGI server runs a synchronous view
    layer = _Recording()
    _use(monkeypatch, layer)
    monkeypatch.setattr(realtime, "_server_loop", None)

    async def server():
        realtime.serve_on(asyncio.get_running_loop())  # as config.asgi does when it serves
        await sync_to_async(realtime.push)(["chat.7"], {"event": "typing"})
        return asyncio.get_running_loop()

    # when
    loop = asyncio.run(server())

    # then the frame went out on the server's loop
    assert [(group, sent_on) for group, _, sent_on in layer.sent] == [("chat.7", loop)]


def test_pushes_outside_a_server_share_one_loop_of_the_process(monkeypatch):
    # given a (Redis-like) layer in a process that serves no websockets, as a Celery worker
    layer = _Recording()
    _use(monkeypatch, layer)
    monkeypatch.setattr(realtime, "_server_loop", None)

    # when two threads push, one after the other
    for n in (1, 2):
        thread = threading.Thread(target=realtime.push, args=(["chat.5"], {"event": "message", "n": n}))
        thread.start()
        thread.join(timeout=10)

    # then both frames went out on one loop, which keeps running for the next push
    loops = {sent_on for _, _, sent_on in layer.sent}
    assert len(layer.sent) == 2 and len(loops) == 1
    (loop,) = loops
    assert loop is realtime._sender_loop() and loop.is_running()  # noqa: SLF001 (a test's look inside)


def test_the_in_process_layer_gets_a_push_of_the_servers_sync_code(monkeypatch):
    # given the embedded default's in-process layer and a socket's channel in a group, on one loop
    layer = InMemoryChannelLayer()
    _use(monkeypatch, layer)
    channel = f"test.{uuid.uuid4().hex}"

    async def server():
        await layer.group_add("widget.3", channel)
        # when a view pushes
        await sync_to_async(realtime.push)(["widget.3"], {"event": "chat"})
        # then the frame is in the group's channel
        return await asyncio.wait_for(layer.receive(channel), 2)

    assert asyncio.run(server()) == {"type": "push", "frame": {"event": "chat"}}


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
    # given the configured Redis layer (a prefix of this test's own) and a socket's channel joined
    # from its loop
    from channels_redis.pubsub import RedisPubSubChannelLayer

    config = settings.CHANNEL_LAYERS["default"]["CONFIG"]
    layer = RedisPubSubChannelLayer(**config, prefix=f"test-{uuid.uuid4().hex[:8]}")
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
        # and both went out on the process's one sending loop: one layer connection for every push
        assert set(layer._layers) == {socket_loop, realtime._sender_loop()}  # noqa: SLF001 (a test's look inside)
    finally:
        socket_loop.close()  # channels-redis closes this loop's connections
