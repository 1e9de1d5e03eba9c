"""The visitor's websocket: /ws/visitor/{button_guid}/?session=<token>[&since=<message_id>].

Server frames are the pushes of apps.chats.realtime for the contact's room (`{"event": "message" |
"typing" | "seen", ...}`) plus `{"event": "error", "code", "detail"}` answers to bad client frames
and `{"event": "pong"}`. Client frames: `{"type": "typing", "state": "start" | "stop"}`,
`{"type": "seen", "message_id": n}`, `{"type": "ping"}`.

SECURITY: the socket is accepted and then closed with 4404 (unknown widget), 4401 (missing,
unknown or foreign session) or 4400 (bad `since`), so the embed script can read the reason (a
refusal before the handshake reaches a browser only as 1006). The socket joins only the group of
the session contact's on-site room (which receives visitor-visible frames only) and the contact's
own notice group.
"""

from __future__ import annotations

import json
import logging
import time
from collections import deque
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from apps.core.errors import AppError

from ..realtime import chat_group
from ..serializers import visitor_message_frame
from . import auth, services

logger = logging.getLogger(__name__)

CLOSE_BAD_REQUEST, CLOSE_UNAUTHORIZED, CLOSE_NOT_FOUND = 4400, 4401, 4404
FRAME_MAX_CHARS = 4096
# Client frames per connection: at most FRAMES_PER_WINDOW in FRAME_WINDOW seconds.
FRAMES_PER_WINDOW, FRAME_WINDOW = 30, 10.0
# Message ids already sent, so a live push and a replay of the same message go out once.
SENT_MEMORY = 1000


def _open(button_guid: str, token: str):
    """(close code, None) or (None, (widget, contact))."""
    try:
        widget = auth.resolve_widget(button_guid)
    except AppError:
        return CLOSE_NOT_FOUND, None
    session = auth.find_session(widget=widget, token=token)
    if session is None:
        return CLOSE_UNAUTHORIZED, None
    return None, (widget, session.contact)


def _query(scope) -> dict[str, str]:
    params = parse_qs(scope.get("query_string", b"").decode("latin-1"))
    return {key: values[-1] for key, values in params.items()}


class VisitorConsumer(AsyncJsonWebsocketConsumer):
    async def connect(self):
        self.chat_id: int | None = None
        self.sent_order: deque[int] = deque()
        self.sent_ids: set[int] = set()
        self.cursor = 0
        self.frame_times: deque[float] = deque()

        params = _query(self.scope)
        button_guid = self.scope["url_route"]["kwargs"].get("button_guid", "")
        code, opened = await database_sync_to_async(_open)(button_guid, params.get("session", ""))
        await self.accept()
        if code is not None:
            await self.close(code=code)
            return
        since = params.get("since")
        if since is not None and not (since.isdigit() and len(since) <= 18):
            await self.close(code=CLOSE_BAD_REQUEST)
            return
        self.widget, self.contact = opened
        self.cursor = int(since) if since is not None else 0

        # The notice group first: a room made from now on is announced to this socket.
        await self._join(services.contact_group(self.contact.guid))
        chat = await database_sync_to_async(services.get_room)(widget=self.widget, contact=self.contact)
        if chat is not None:
            await self._enter_room(chat.pk, replay=since is not None)

    # --- server -> client ---------------------------------------------------------------------------

    async def push(self, event):
        """A frame of apps.chats.realtime for the room group."""
        frame = event.get("frame") or {}
        if frame.get("event") == "message":
            message_id = (frame.get("message") or {}).get("id")
            if message_id is not None and not self._remember(message_id):
                return
        await self.send_json(frame)

    async def visitor_room(self, event):
        """The contact's room was just made: join it and send what it already holds."""
        chat_id = event.get("chat_id")
        if self.chat_id is None and isinstance(chat_id, int):
            chat = await database_sync_to_async(services.get_room)(widget=self.widget, contact=self.contact)
            if chat is not None and chat.pk == chat_id:
                await self._enter_room(chat.pk, replay=True)

    async def _enter_room(self, chat_id: int, *, replay: bool) -> None:
        self.chat_id = chat_id
        await self._join(chat_group(chat_id))
        if not replay:
            return
        after = self.cursor
        while True:
            batch = await database_sync_to_async(services.list_visible_messages)(
                widget=self.widget, chat_id=chat_id, after_id=after
            )
            for message in batch:
                if self._remember(message.pk):
                    frame = {"event": "message", "chat_id": chat_id, "message": visitor_message_frame(message)}
                    await self.send_json(frame)
            if len(batch) < services.MESSAGES_PER_CALL:
                break
            after = batch[-1].pk

    def _remember(self, message_id: int) -> bool:
        """Record a message as sent; False when it already was."""
        if message_id in self.sent_ids:
            return False
        self.sent_ids.add(message_id)
        self.sent_order.append(message_id)
        if len(self.sent_order) > SENT_MEMORY:
            self.sent_ids.discard(self.sent_order.popleft())
        self.cursor = max(self.cursor, message_id)
        return True

    async def _join(self, group: str) -> None:
        if group not in self.groups:
            await self.channel_layer.group_add(group, self.channel_name)
            self.groups.append(group)

    async def _error(self, code: str, detail: str) -> None:
        await self.send_json({"event": "error", "code": code, "detail": detail})

    # --- client -> server ---------------------------------------------------------------------------

    async def receive(self, text_data=None, bytes_data=None, **kwargs):
        if not getattr(self, "contact", None):
            return  # closing: nothing is accepted from a refused socket
        if text_data is None:
            await self._error("invalid_frame", "Send JSON text frames.")
            return
        if len(text_data) > FRAME_MAX_CHARS:
            await self._error("frame_too_large", f"A frame holds at most {FRAME_MAX_CHARS} characters.")
            return
        try:
            content = json.loads(text_data)
        except ValueError:
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
        handler = {"typing": self._typing, "seen": self._seen, "ping": self._ping}.get(content.get("type"))
        if handler is None:
            await self._error("unknown_frame", "Known frame types: typing, seen, ping.")
            return
        try:
            await handler(content)
        except AppError as err:
            await self._error(err.code, err.detail)
        except Exception:
            logger.exception("visitor frame failed", extra={"frame_type": content.get("type")})
            await self._error("server_error", "The frame could not be handled; retry later.")

    def _admit_frame(self) -> bool:
        now = time.monotonic()
        while self.frame_times and self.frame_times[0] <= now - FRAME_WINDOW:
            self.frame_times.popleft()
        if len(self.frame_times) >= FRAMES_PER_WINDOW:
            return False
        self.frame_times.append(now)
        return True

    async def _typing(self, content: dict) -> None:
        state = content.get("state")
        if state not in ("start", "stop"):
            await self._error("invalid_frame", "`state` is start or stop.")
            return
        await database_sync_to_async(services.note_typing)(widget=self.widget, contact=self.contact, state=state)

    async def _seen(self, content: dict) -> None:
        message_id = content.get("message_id")
        if isinstance(message_id, bool) or not isinstance(message_id, int) or message_id < 1:
            await self._error("invalid_frame", "`message_id` is a message id.")
            return
        await database_sync_to_async(services.mark_seen)(
            widget=self.widget, contact=self.contact, message_id=message_id
        )

    async def _ping(self, content: dict) -> None:
        await self.send_json({"event": "pong"})
