"""The one way our websockets read client frames (the visitor's and the operator's sockets).

A client frame is a JSON text frame of at most FRAME_MAX_CHARS characters holding an object with a
`type`; a connection may send FRAMES_PER_WINDOW frames in FRAME_WINDOW seconds. A frame that breaks
a rule is answered `{"event": "error", "code", "detail"}` (`_error`: underscored, so no channel-layer
message type can call it) and the socket stays open; a handler's
AppError is answered the same way with its code; an unexpected error is logged and answered
`server_error`. Subclasses name their frame types in `frame_handlers()` and say in `accepting()`
whether the socket may take frames at all (not while refused or closing).
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable
from urllib.parse import parse_qs

from channels.generic.websocket import AsyncJsonWebsocketConsumer

from apps.core.api import parsers
from apps.core.errors import AppError, InvalidJSON

logger = logging.getLogger(__name__)

FRAME_MAX_CHARS = 4096
FRAMES_PER_WINDOW, FRAME_WINDOW = 30, 10.0

FrameHandler = Callable[[dict], Awaitable[None]]


def query_params(scope) -> dict[str, str]:
    """The socket URL's query string, the last value of each name."""
    params = parse_qs(scope.get("query_string", b"").decode("latin-1"))
    return {key: values[-1] for key, values in params.items()}


class FramedJsonConsumer(AsyncJsonWebsocketConsumer):
    frame_max_chars: int = FRAME_MAX_CHARS
    frames_per_window: int = FRAMES_PER_WINDOW
    frame_window: float = FRAME_WINDOW

    def accepting(self) -> bool:
        raise NotImplementedError

    def frame_handlers(self) -> dict[str, FrameHandler]:
        raise NotImplementedError

    async def _error(self, code: str, detail: str) -> None:
        await self.send_json({"event": "error", "code": code, "detail": detail})

    async def receive(self, text_data=None, bytes_data=None, **kwargs):
        if not self.accepting():
            return  # refused or closing: nothing is accepted
        if text_data is None:
            await self._error("invalid_frame", "Send JSON text frames.")
            return
        if len(text_data) > self.frame_max_chars:
            await self._error("frame_too_large", f"A frame holds at most {self.frame_max_chars} characters.")
            return
        try:
            content = parsers.loads(text_data)  # the one JSON reader: RFC 8259, nesting bounded
        except InvalidJSON:
            await self._error("invalid_json", "The frame is not valid JSON.")
            return
        await self.receive_json(content)

    async def receive_json(self, content, **kwargs):
        if not self._admit_frame():
            await self._error("rate_limited", "Too many frames; slow down.")
            return
        if not isinstance(content, dict):
            await self._error("invalid_frame", "A frame is a JSON object with a `type`.")
            return
        handlers = self.frame_handlers()
        handler = handlers.get(content.get("type"))
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
