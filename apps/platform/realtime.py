"""Websocket groups and the one way to send to them from synchronous code.

Groups: `chat.<id>` (the visitor's socket of that room) and `widget.<id>` (operator consoles). The
consumers join them; the apps' on-commit event handlers push to them. A push is best effort: a
visitor re-reads with `since` on reconnect, a console re-reads the lists.

`group_send` sends from synchronous code, with `asyncio.run_coroutine_threadsafe` onto an event
loop that outlives the call. In a web process that is the server's loop (`serve_on`, called by
config.asgi as it serves), as the in-process layer of the embedded default needs (its queues belong
to that loop). In any other process (a Celery worker's tasks, a management command) a Redis layer
sends on one loop of the process's own, run by one thread: channels-redis keeps its connections per
event loop, so a push from a worker's task reuses them, where Channels' recipe for synchronous code,
`async_to_sync(layer.group_send)`, runs each call on a new loop and so opens a Redis connection per
push. An in-process layer outside a web server (tests, a shell) keeps that recipe: its queues belong
to the caller's loop. `push` sends a frame with it, or relays it (below).

The embedded default's layer lives inside the web process, which a Celery worker cannot reach. Its
workers (`relay_to_web`, set by config.celery) write each push as a `RelayedPush` row instead, and
the web process, once a socket is open, reads new rows every RELAY_POLL_SECONDS on a thread of its
own and sends them on its event loop. SQLite commits one writer at a time, so row ids appear in
order and the reader never skips a row it has not seen.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
from datetime import timedelta

from asgiref.sync import async_to_sync
from channels.layers import InMemoryChannelLayer, get_channel_layer
from django.conf import settings
from django.db import close_old_connections
from django.utils import timezone

logger = logging.getLogger(__name__)

# A send that has not reached the layer after this long is given up (logged); the sender goes on.
PUSH_TIMEOUT_SECONDS = 5.0
# How often the web process reads the frames workers relayed, how many at most per read, and how
# long a relayed row is kept (a visitor who missed a frame re-reads with `since`).
RELAY_POLL_SECONDS = 0.1
RELAY_BATCH = 200
RELAY_KEEP = timedelta(seconds=60)

# True in a Celery worker process of the embedded default: pushes are relayed through the database.
relay_to_web = False
# The web server's event loop, once it serves (`serve_on`).
_server_loop: asyncio.AbstractEventLoop | None = None
# This process's own sending loop (`_sender_loop`) and the process it was started in.
_own_loop: tuple[int, asyncio.AbstractEventLoop] | None = None
_own_loop_lock = threading.Lock()


def serve_on(loop: asyncio.AbstractEventLoop) -> None:
    """Pushes from this process's synchronous code run on `loop`, the web server's event loop."""
    global _server_loop
    _server_loop = loop


def chat_group(chat_id: int) -> str:
    return f"chat.{chat_id}"


def widget_group(widget_id: int) -> str:
    return f"widget.{widget_id}"


def agent_group(agent_id: int) -> str:
    """The consoles of one agent row (one operator of one widget): what is for that operator only."""
    return f"agent.{agent_id}"


async def _send(layer, groups: list[str], message: dict) -> None:
    for group in groups:
        try:
            await asyncio.wait_for(layer.group_send(group, message), PUSH_TIMEOUT_SECONDS)
        except Exception:  # best effort: the visitor re-reads with `since` on reconnect
            logger.warning("websocket push failed", extra={"group": group})


def group_send(groups: list[str], message: dict) -> None:
    """Send a channel-layer message to every group now, from synchronous code (callers run after
    commit). Never raises: a layer that fails or hangs is logged and given up."""
    if groups:
        _send_all([(list(groups), message)])


async def _send_each(layer, sends: list[tuple[list[str], dict]]) -> None:
    for groups, message in sends:
        await _send(layer, groups, message)


def _send_all(sends: list[tuple[list[str], dict]]) -> None:
    """Every (groups, message) in one hop to the layer's event loop."""
    layer = get_channel_layer()
    if layer is None or not sends:
        return
    loop = _server_loop
    if (loop is None or not loop.is_running()) and not isinstance(layer, InMemoryChannelLayer):
        loop = _sender_loop()
    count = sum(len(groups) for groups, _ in sends)
    try:
        if loop is not None and loop.is_running() and not _on(loop):
            sent = asyncio.run_coroutine_threadsafe(_send_each(layer, sends), loop)
            sent.result(timeout=PUSH_TIMEOUT_SECONDS * count + 1)
        else:
            async_to_sync(_send_each)(layer, sends)
    except Exception:  # best effort, as above
        logger.warning("websocket push failed", extra={"groups": [g for groups, _ in sends for g in groups][:20]})


def _sender_loop() -> asyncio.AbstractEventLoop:
    """The event loop this process sends on outside a web server: started by the first push (in the
    process that pushes: a forked worker child starts its own), run by a daemon thread for the
    life of the process."""
    global _own_loop
    with _own_loop_lock:
        if _own_loop is None or _own_loop[0] != os.getpid():
            loop = asyncio.new_event_loop()
            running = threading.Event()
            loop.call_soon_threadsafe(running.set)
            threading.Thread(target=loop.run_forever, name="realtime-push", daemon=True).start()
            running.wait()
            _own_loop = (os.getpid(), loop)
        return _own_loop[1]


def _on(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False


def push(groups: list[str], frame: dict) -> None:
    """Send `frame` to the sockets of every group (their consumers' `push`)."""
    if relay_to_web and groups:
        _relay(groups, frame)
        return
    group_send(groups, {"type": "push", "frame": frame})


def push_each(pushes: list[tuple[list[str], dict]]) -> None:
    """`push` of many frames, each to its own groups, at the cost of one: one hop to the layer's
    event loop (one INSERT when relayed), whatever their number."""
    pushes = [(list(groups), frame) for groups, frame in pushes if groups]
    if not pushes:
        return
    if relay_to_web:
        _relay_many(pushes)
        return
    _send_all([(groups, {"type": "push", "frame": frame}) for groups, frame in pushes])


# --- the embedded default's relay from workers to the web process ------------------------------------


def relay_enabled() -> bool:
    """Pushes of other processes reach this process's sockets only through the relay: the layer is
    in-process (no REDIS_URL) and the setting has not turned the relay off."""
    return settings.REALTIME_RELAY and isinstance(get_channel_layer(), InMemoryChannelLayer)


def _relay(groups: list[str], frame: dict) -> None:
    from .models import RelayedPush

    try:
        RelayedPush.objects.create(groups=list(groups), frame=frame)
    except Exception:  # a push is best effort: the visitor re-reads with `since` on reconnect
        logger.warning("websocket push failed", extra={"groups": groups})


def _relay_many(pushes: list[tuple[list[str], dict]]) -> None:
    from .models import RelayedPush

    try:
        RelayedPush.objects.bulk_create(
            [RelayedPush(groups=groups, frame=frame) for groups, frame in pushes], batch_size=RELAY_BATCH
        )
    except Exception:  # best effort, as above
        logger.warning("websocket push failed", extra={"pushes": len(pushes)})


def purge_relayed_pushes() -> int:
    """Delete relayed frames older than RELAY_KEEP (read or not: a socket has re-read by then)."""
    from .models import RelayedPush

    deleted, _ = RelayedPush.objects.filter(created_at__lt=timezone.now() - RELAY_KEEP).delete()
    return deleted


class _RelayReader:
    """The web process's reader of relayed frames: one thread, started by the first socket."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._pid = 0

    def ensure_started(self, loop: asyncio.AbstractEventLoop) -> None:
        with self._lock:
            if self._thread is not None and self._thread.is_alive() and self._pid == os.getpid():
                return
            self._pid = os.getpid()
            self._thread = threading.Thread(target=self._run, args=(loop,), name="realtime-relay", daemon=True)
            self._thread.start()

    def _run(self, loop: asyncio.AbstractEventLoop) -> None:
        from .models import RelayedPush

        layer = get_channel_layer()
        last = None
        purged_at = 0.0
        while loop.is_running():
            try:
                if last is None:  # frames written before any socket was open have nobody to reach
                    last = RelayedPush.objects.order_by("-pk").values_list("pk", flat=True).first() or 0
                rows = list(
                    RelayedPush.objects.filter(pk__gt=last)
                    .order_by("pk")
                    .values_list("pk", "groups", "frame")[:RELAY_BATCH]
                )
                for pk, groups, frame in rows:
                    asyncio.run_coroutine_threadsafe(_send(layer, groups, {"type": "push", "frame": frame}), loop)
                    last = pk
                if time.monotonic() - purged_at > RELAY_KEEP.total_seconds():
                    purged_at = time.monotonic()
                    purge_relayed_pushes()
            except Exception:
                logger.exception("relayed websocket frames could not be read")
                close_old_connections()
                rows = []
            if len(rows) < RELAY_BATCH:
                time.sleep(RELAY_POLL_SECONDS)


_relay_reader = _RelayReader()


def start_relay_reader() -> None:
    """Called on the web server's event loop when a socket connects (apps.core.websocket)."""
    if relay_enabled():
        _relay_reader.ensure_started(asyncio.get_running_loop())
