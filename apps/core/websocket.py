"""The one way our websockets read client frames (the visitor's and the operator's sockets), and the
per-key caps on open sockets.

A client frame is a JSON text frame of at most FRAME_MAX_CHARS characters holding an object with a
`type`; a connection may send FRAMES_PER_WINDOW frames in FRAME_WINDOW seconds. Every frame counts
toward that rate, valid or not (binary, malformed, oversized): past it the socket is closed with
1008 (policy violation). A text frame over FRAME_MAX_CHARS closes the socket with 1009 (the server
itself refuses larger frames while reading them: the Procfile's --ws-max-size). Any other frame that breaks a
rule is answered `{"event": "error", "code", "detail"}` (`_error`: underscored, so no
channel-layer message type can call it) and the socket stays open; a handler's AppError is answered
the same way with its code; an unexpected error is logged and answered `server_error`. Subclasses
name their frame types in `frame_handlers()` and say in `accepting()` whether the socket may take
frames at all (not while refused or closing).

The client may go away at any moment, also while the consumer is sending to it. ASGI servers then
raise an OSError from `send` (uvicorn's ClientDisconnected) while the socket's websocket.disconnect
already waits in the queue: the frame is dropped and the disconnect runs next, as after any close
(so an operator goes offline and a visitor's socket slots free at once).

The way out runs once per socket, whatever ended it (a close, a consumer error, a cancellation), and
each of its steps runs whatever the others did: leaving the groups, the subclass's `disconnect`
(an operator's presence), freeing the socket's slots. A step that fails (Redis timing out, the
layer refusing) or hangs past CLEANUP_STEP_SECONDS is logged and the next one runs.

SocketSlots caps how many sockets one key (a visitor session, a client address) holds open at once,
across processes: each socket leases one of `limit` slots (`apps.core.ratelimit.Slots`, in the
default cache) and frees it when it closes; while it is open, the process's one refresher renews
the leases of all its sockets in one batch. The renewal stops as the way out begins, so a lease
that could not be freed (Redis down at that moment), or whose process died, lapses within SLOT_TTL.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections import deque
from collections.abc import Awaitable, Callable
from urllib.parse import parse_qs

from asgiref.sync import sync_to_async
from channels.db import aclose_old_connections
from channels.exceptions import StopConsumer
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from apps.core.api import parsers
from apps.core.errors import AppError, InvalidJSON
from apps.core.ratelimit import Slot, Slots, release_slots, renew_slots
from apps.platform import metrics, realtime

logger = logging.getLogger(__name__)

FRAME_MAX_CHARS = 4096
FRAMES_PER_WINDOW, FRAME_WINDOW = 30, 10.0
CLOSE_POLICY_VIOLATION, CLOSE_TOO_BIG = 1008, 1009
# A slot lease lives SLOT_TTL seconds unless it is renewed: the process's one refresher renews the
# leases of all its open sockets every SLOT_REFRESH seconds.
SLOT_TTL, SLOT_REFRESH = 60, 20
# The longest one step of a socket's way out may take before the next one runs.
CLEANUP_STEP_SECONDS = 15

FrameHandler = Callable[[dict], Awaitable[None]]


def query_params(scope) -> dict[str, str]:
    """The socket URL's query string, the last value of each name."""
    params = parse_qs(scope.get("query_string", b"").decode("latin-1"))
    return {key: values[-1] for key, values in params.items()}


def header(scope, name: bytes) -> str | None:
    """The last value of one request header of the handshake."""
    values = [value for key, value in scope.get("headers", []) if key == name]
    return values[-1].decode("latin-1") if values else None


class SocketSlots:
    """The slots one socket holds (see the module docstring), each a lease of `ratelimit.Slots`. Use
    `claim` for the caps (off the event loop), `hold` once they are taken, `release` when the socket
    closes."""

    def __init__(self) -> None:
        self.holder = uuid.uuid4().hex
        self.held: list[Slot] = []

    def claim(self, *caps: tuple[str, str, int]) -> bool:
        """Lease one of `limit` slots of each `(kind, key, limit)` (limit <= 0: no cap); False,
        holding none of them, when one cap has every slot held. Blocking: the caller runs it off the
        event loop, in the thread hop its connect makes anyway. SlotStoreUnavailable when the cache
        fails."""
        taken: list[Slot] = []
        for kind, key, limit in caps:
            if limit <= 0:
                continue
            slot = Slots(f"ws-{kind}", limit, ttl=SLOT_TTL).acquire(key, token=self.holder)
            if slot is None:
                release_slots(taken)
                return False
            taken.append(slot)
        self.held.extend(taken)
        return True

    def hold(self) -> None:
        """Keep the leases alive while the socket is open (the process's one refresher)."""
        if self.held:
            _refresher.add(self)

    def stop(self) -> None:
        """Stop refreshing the leases (they lapse within SLOT_TTL unless released)."""
        _refresher.discard(self)

    async def release(self) -> None:
        """Free every lease this socket holds; one that cannot be freed now lapses on its own."""
        self.stop()
        held, self.held = self.held, []
        if held:
            await sync_to_async(release_slots, thread_sensitive=False)(held)


class _SlotRefresher:
    """One task per event loop renews the leases of every open socket every SLOT_REFRESH seconds, in
    one batch: an idle socket holds no task or timer of its own, and the renewals of all sockets
    cost one Redis round trip (a pipeline of EXPIREs) instead of a thread hop each."""

    def __init__(self) -> None:
        self.holders: set[SocketSlots] = set()
        self._task: asyncio.Task | None = None

    def add(self, slots: SocketSlots) -> None:
        self.holders.add(slots)
        loop = asyncio.get_running_loop()
        if self._task is None or self._task.done() or self._task.get_loop() is not loop:
            self._task = loop.create_task(self._run())

    def discard(self, slots: SocketSlots) -> None:
        self.holders.discard(slots)

    async def _run(self) -> None:
        while self.holders:
            await asyncio.sleep(SLOT_REFRESH)
            held = [slot for slots in list(self.holders) for slot in slots.held]
            if not held:
                continue
            try:
                await sync_to_async(renew_slots, thread_sensitive=False)(held, SLOT_TTL)
            except Exception:  # the cache blinked: the next round retries before the expiry
                logger.warning("socket slot refresh failed", exc_info=True)


_refresher = _SlotRefresher()


class FramedJsonConsumer(AsyncJsonWebsocketConsumer):
    # The `kind` label of chatwidget_websockets_open: from the accept to the disconnect.
    metrics_kind: str = "other"
    frame_max_chars: int = FRAME_MAX_CHARS
    frames_per_window: int = FRAMES_PER_WINDOW
    frame_window: float = FRAME_WINDOW

    async def __call__(self, scope, receive, send):
        async def send_while_open(message):
            try:
                await send(message)
            except OSError:  # the client went away: its websocket.disconnect comes next (docstring)
                logger.debug("websocket frame dropped: the client went away", extra={"path": scope.get("path")})

        self._open = self._counted = False
        self.slots = SocketSlots()
        try:
            await super().__call__(scope, receive, send_while_open)
        finally:
            if self._open:  # it ended without its websocket.disconnect (an error, a cancellation)
                await self._clean_up(1011)

    async def websocket_connect(self, message):
        self._open = True
        realtime.start_relay_reader()
        await super().websocket_connect(message)

    async def accept(self, subprotocol=None, headers=None):
        await super().accept(subprotocol, headers)
        if not self._counted:
            self._counted = True
            metrics.socket_opened(self.metrics_kind)

    async def websocket_disconnect(self, message):
        await self._clean_up(message.get("code", 1005))
        raise StopConsumer()

    async def _clean_up(self, code: int) -> None:
        """The socket's way out (the module docstring): every step, once."""
        if not self._open:
            return
        self._open = False
        if self._counted:
            self._counted = False
            metrics.socket_closed(self.metrics_kind)
        self.slots.stop()
        for group in list(self.groups):
            await self._step("group discard", self.channel_layer.group_discard(group, self.channel_name))
        await self._step("disconnect", self.disconnect(code))
        await self._step("slot release", self.slots.release())
        await self._step("database connections", aclose_old_connections())

    async def _step(self, name: str, step: Awaitable) -> None:
        try:
            await asyncio.wait_for(step, CLEANUP_STEP_SECONDS)
        except Exception:
            logger.warning("websocket cleanup step failed", exc_info=True, extra={"step": name})

    def accepting(self) -> bool:
        raise NotImplementedError

    def frame_handlers(self) -> dict[str, FrameHandler]:
        raise NotImplementedError

    async def _error(self, code: str, detail: str) -> None:
        await self.send_json({"event": "error", "code": code, "detail": detail})

    async def receive(self, text_data=None, bytes_data=None, **kwargs):
        if self.__dict__.get("_closed_for_abuse") or not self.accepting():
            return  # refused or closing: nothing is accepted
        # Every frame counts, whatever it holds: a flood of bad frames is a flood.
        if not self._admit_frame():
            await self._shut(CLOSE_POLICY_VIOLATION, "Too many frames.")
            return
        if text_data is None:
            await self._error("invalid_frame", "Send JSON text frames.")
            return
        if len(text_data) > self.frame_max_chars:
            await self._shut(CLOSE_TOO_BIG, f"A frame holds at most {self.frame_max_chars} characters.")
            return
        try:
            content = parsers.loads(text_data)  # the one JSON reader: RFC 8259, nesting bounded
        except InvalidJSON:
            await self._error("invalid_json", "The frame is not valid JSON.")
            return
        await self.receive_json(content)

    async def _shut(self, code: int, reason: str) -> None:
        """Close the socket for breaking a limit; later frames are dropped unread."""
        self.__dict__["_closed_for_abuse"] = True
        logger.info("websocket closed for abuse", extra={"close_code": code, "path": self.scope.get("path")})
        await self.close(code=code, reason=reason)

    async def receive_json(self, content, **kwargs):
        if not isinstance(content, dict):
            await self._error("invalid_frame", "A frame is a JSON object with a `type`.")
            return
        handlers = self.frame_handlers()
        kind = content.get("type")
        handler = handlers.get(kind) if isinstance(kind, str) else None
        if handler is None:
            await self._error("unknown_frame", f"Known frame types: {', '.join(handlers)}.")
            return
        try:
            await handler(content)
        except AppError as err:
            await self._error(err.code, err.detail)
        except Exception:
            logger.exception("websocket frame failed", extra={"frame_type": content.get("type")})
            await self._error("server_error", "The frame could not be handled; retry later.")

    def _admit_frame(self) -> bool:
        times = self.__dict__.setdefault("_frame_times", deque())
        now = time.monotonic()
        while times and times[0] <= now - self.frame_window:
            times.popleft()
        if len(times) >= self.frames_per_window:
            return False
        times.append(now)
        return True
