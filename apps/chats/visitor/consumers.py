"""The visitor's websocket: /ws/visitor/{button_guid}/?session=<token>[&since=<message_id>].

Server frames are the pushes of apps.chats.realtime for the contact's room (`{"event": "message" |
"typing" | "seen" | "chat" | "queue", ...}`, `chat` when the room closes or a machine hands it to people,
`queue` when its place in the routing queue changes,
and once after the replay of a room that is closed or waiting for a person) plus `{"event": "error", "code",
"detail"}` answers to bad client frames and `{"event": "pong"}`. Client frames: `{"type": "typing",
"state": "start" | "stop", "draft"?: text}` (the draft reaches the operators only while the widget's
`typing_preview` is on, at most two a second per socket), `{"type": "seen", "message_id": n}`,
`{"type": "ping"}`.

SECURITY: the socket is accepted and then closed with 4404 (unknown widget), 4401 (missing,
unknown or foreign session), 4400 (bad `since`) or 1008 (the session already holds
SOCKETS_PER_SESSION sockets, or the client address VISITOR_SOCKETS_PER_ADDRESS, across processes),
so the embed script can read the reason (a refusal before the handshake reaches a browser only as
1006). The socket joins only the group of the session contact's on-site room (which receives
visitor-visible frames only) and the contact's own notice group. Frame limits: apps.core.websocket.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque

from channels.db import database_sync_to_async
from django.conf import settings

from apps.core.errors import AppError
from apps.core.websocket import CLOSE_POLICY_VIOLATION, FramedJsonConsumer, SocketSlots, header, query_params
from apps.platform.numbers import MAX_ID, parse_int
from apps.platform.realtime import chat_group

from ..payloads import visitor_chat_frame, visitor_message_frame
from . import auth, services

CLOSE_BAD_REQUEST, CLOSE_UNAUTHORIZED, CLOSE_NOT_FOUND = 4400, 4401, 4404
# The session's contact was merged into another: the widget reconnects as after any drop.
CLOSE_MOVED = 4409
# Message ids already sent, so a live push and a replay of the same message go out once.
SENT_MEMORY = 1000
# Product decision ("Visitor API"): one visitor session holds at most this many sockets at once.
SOCKETS_PER_SESSION = 10
# Product decision ("Typing preview"): at most two drafts a second per socket reach the operators.
DRAFTS_PER_SECOND = 2
DRAFT_CLOCK = time.monotonic


def _open(button_guid: str, token: str, *, bad_since: bool, address: str, slots: SocketSlots):
    """(close code, None) or (None, (widget, contact, session id, room or None)) with the socket's
    slots claimed: one of the session's and one of the client `address`'s (FramedJsonConsumer frees
    them on the way out). The look-ups are the visitor API's own, each compiled once: the widget
    (unknown: 4404), the session (unknown, idle or foreign: 4401; touched as the API touches it),
    then the room. A bad `since` (4400) and a full cap (1008) come after the first two, and leave no
    slot taken."""
    try:
        widget = auth.resolve_widget(button_guid)
    except AppError:
        return CLOSE_NOT_FOUND, None
    session = auth.find_session(widget=widget, token=token)
    if session is None:
        return CLOSE_UNAUTHORIZED, None
    if bad_since:
        return CLOSE_BAD_REQUEST, None
    room = services.get_room(widget=widget, contact=session.contact)
    if not slots.claim(
        ("visitor-session", str(session.pk), SOCKETS_PER_SESSION),
        ("visitor-address", address, settings.VISITOR_SOCKETS_PER_ADDRESS),
    ):
        return CLOSE_POLICY_VIOLATION, None
    return None, (widget, session.contact, session.pk, room)


class VisitorConsumer(FramedJsonConsumer):
    metrics_kind = "visitor"

    async def connect(self):
        self.chat_id: int | None = None
        self.sent_order: deque[int] = deque()
        self.sent_ids: set[int] = set()
        self.cursor = 0
        self.draft_times: deque[float] = deque()

        params = query_params(self.scope)
        button_guid = self.scope["url_route"]["kwargs"].get("button_guid", "")
        since = params.get("since")
        bad_since = False
        if since is not None:
            try:
                self.cursor = parse_int(since, maximum=MAX_ID)  # the one ASCII integer parser
            except ValueError:
                bad_since = True
        # Every check and the slot claims in one hop to a thread, before the accept: between the
        # accept and joining the groups below nothing may wait, or a push sent in that gap would miss
        # the socket. Not on the one thread every thread-sensitive call shares: connects run side by
        # side, each on a pooled connection of its own.
        code, opened = await database_sync_to_async(_open, thread_sensitive=False)(
            button_guid, params.get("session", ""), bad_since=bad_since, address=self._address(), slots=self.slots
        )
        if code is None:
            self.slots.hold()
        await self.accept()
        if code is not None:
            await self.close(code=code)
            return
        self.widget, self.contact, _, room = opened

        notices = services.contact_group(self.contact.guid)
        if room is not None:
            self.chat_id = room.pk
            await asyncio.gather(self._join(notices), self._join(chat_group(room.pk)))
            if since is not None:
                await self._replay(room.pk)
            await self._send_state(room)
            return
        # The notice group first: a room made from now on is announced to this socket; one made since
        # the look-up above is found by the second look, and is new: what it holds is sent (its
        # first messages may have been pushed before this socket joined it).
        # On the shared thread, unlike the look-up above (a connect without a room is the rarer one):
        # it races the room's first write, and SQLite's shared in-memory database (the embedded
        # default's tests) fails a read from another thread during a write instead of waiting.
        await self._join(notices)
        chat = await database_sync_to_async(services.get_room)(widget=self.widget, contact=self.contact)
        if chat is not None:
            await self._enter_room(chat.pk, replay=True)

    def _address(self) -> str:
        """The client address as the visitor API reads it (TRUSTED_PROXY_HOPS applies)."""
        client = self.scope.get("client") or (None, None)
        return auth.address_from(client[0], header(self.scope, b"x-forwarded-for"))

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

    async def visitor_gone(self, event):
        """The contact's erasure was accepted: its sessions are gone, so the socket closes as one
        whose session ended."""
        await self.close(code=CLOSE_UNAUTHORIZED)

    async def visitor_moved(self, event):
        """The contact was merged into another: the session (kept) now speaks for that contact, so
        the socket closes and the widget's reconnect joins the target's room."""
        await self.close(code=CLOSE_MOVED)

    async def _send_state(self, room) -> None:
        """After the replay, a room that is closed or waiting for a person says so (the widget shows
        the conversation ended, or its offline form while nobody is online); an open room sends
        nothing: that is what the widget assumes."""
        frame = visitor_chat_frame(room)
        if frame is not None and (frame["status"] == "expired" or frame["awaiting_human"]):
            await self.send_json(frame)

    async def _enter_room(self, chat_id: int, *, replay: bool) -> None:
        self.chat_id = chat_id
        await self._join(chat_group(chat_id))
        if replay:
            await self._replay(chat_id)

    async def _replay(self, chat_id: int) -> None:
        """Send the room's messages after the cursor, oldest first."""
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

    # --- client -> server (frames read by FramedJsonConsumer) -------------------------------------------

    def accepting(self) -> bool:
        return bool(getattr(self, "contact", None))  # a refused socket is closing

    def frame_handlers(self):
        return {"typing": self._typing, "seen": self._seen, "ping": self._ping}

    async def _typing(self, content: dict) -> None:
        state = content.get("state")
        if state not in ("start", "stop"):
            await self._error("invalid_frame", "`state` is start or stop.")
            return
        draft = content.get("draft")
        if draft is not None and not isinstance(draft, str):
            await self._error("invalid_frame", "`draft` is a string.")
            return
        if draft is not None and not self._draft_slot():
            draft = None  # over the socket's allowance: the typing state still goes through
        await database_sync_to_async(services.note_typing)(
            widget=self.widget, contact=self.contact, state=state, draft=draft
        )

    def _draft_slot(self) -> bool:
        """At most DRAFTS_PER_SECOND drafts of this socket are passed on in any second."""
        now = DRAFT_CLOCK()
        while self.draft_times and now - self.draft_times[0] >= 1.0:
            self.draft_times.popleft()
        if len(self.draft_times) >= DRAFTS_PER_SECOND:
            return False
        self.draft_times.append(now)
        return True

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
