"""The operator's websocket: /ws/agent/[?widget=<id>], authenticated by the Django session.

Server frames: `{"event": "ready", "operator_id", "widget_id"}` once registered, then the pushes of
apps.chats.realtime for the widget's console group (`{"event": "message" | "chat" | "typing" |
"seen", ...}`, private notes included), `{"event": "pong"}` and `{"event": "error", "code",
"detail"}` answers to bad client frames. Client frames: `{"type": "ping"}` (also a heartbeat) and
`{"type": "status", "status": "online" | "away"}`, the console's presence switch (the agent's
stored status active / relaxation, apps.agents.services.set_agent_status), answered
`{"event": "status", "status"}`; the ready frame names the current one. The status the agent already
has changes nothing; past services.STATUS_CHANGE_BUDGET changes per agent (over all the user's
sockets of the widget) a change is answered `{"event": "error", "code": "rate_limited"}`, changes
nothing, and the socket stays open.

Presence: the socket counts for its agent while it heartbeats (apps.agents.presence); the agent's
first socket emits agent.online and its last one agent.offline.

SECURITY: the route checks the Origin against ALLOWED_HOSTS (`agent_socket_app`), because a session
cookie rides along with any page's handshake. The socket is accepted and then closed with 4401 (no
logged-in active user), 4403 (the user is no active operator of the widget), 4400 (bad `widget`, or
none while the user serves several widgets) or 1008 (the user already holds SOCKETS_PER_USER
operator sockets, across processes), so the console can read the reason. Every heartbeat
checks again: a session that ended closes the socket with 4401, a banned or removed agent with 4403.
It joins only its own widget's group and its own agent's (what is for that operator alone: a
mention, `{"event": "mention", ...}`).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from importlib import import_module
from types import SimpleNamespace

from channels.auth import AuthMiddlewareStack
from channels.db import database_sync_to_async
from channels.security.websocket import AllowedHostsOriginValidator
from django.conf import settings
from django.contrib import auth

from apps.core.websocket import CLOSE_POLICY_VIOLATION, FramedJsonConsumer, SocketSlots, query_params
from apps.platform.numbers import MAX_ID, parse_int
from apps.platform.realtime import agent_group, widget_group

from . import presence, services
from .models import Agent

logger = logging.getLogger(__name__)

CLOSE_BAD_REQUEST, CLOSE_UNAUTHORIZED, CLOSE_FORBIDDEN = 4400, 4401, 4403
# Operator sockets one user holds open at once (console tabs, over every widget the user serves):
# each socket heartbeats presence to the database and Redis, so the cap bounds what one session can
# make the web tier do.
SOCKETS_PER_USER = 20
REVOKED = {
    CLOSE_UNAUTHORIZED: "The session ended; log in again.",
    CLOSE_FORBIDDEN: "You are no longer an operator of this widget.",
}


def _operators(user_id: int):
    return Agent.objects.filter(user_id=user_id).exclude(status=Agent.Status.BANNED)


def _resolve(user, widget_param: str | None, slots: SocketSlots) -> tuple[int | None, str, Agent | None]:
    """(close code, reason, None) or (None, "", the agent row this socket speaks for) with one of the
    user's socket slots claimed (FramedJsonConsumer frees it on the way out)."""
    if user is None or not user.is_authenticated or not user.is_active:
        return CLOSE_UNAUTHORIZED, "Log in first.", None
    widget_id = None
    if widget_param is not None:
        try:
            widget_id = parse_int(widget_param, minimum=1, maximum=MAX_ID)
        except ValueError:
            return CLOSE_BAD_REQUEST, "`widget` is a widget id.", None
    agents = _operators(user.pk)
    if widget_id is not None:
        agent = agents.filter(widget_id=widget_id).first()
    else:
        found = list(agents.order_by("pk")[:2])
        if len(found) > 1:
            return CLOSE_BAD_REQUEST, "You serve several widgets: pass `widget`.", None
        agent = found[0] if found else None
    if agent is None:
        return CLOSE_FORBIDDEN, "You are not an operator of this widget.", None
    if not slots.claim(("operator-user", str(user.pk), SOCKETS_PER_USER)):
        return CLOSE_POLICY_VIOLATION, f"At most {SOCKETS_PER_USER} consoles are open at once: close another.", None
    return None, "", agent


# The console's words for the stored status an agent switches between.
STATUS_WORDS = {Agent.Status.ACTIVE: "online", Agent.Status.RELAXATION: "away"}
STATUS_OF_WORD = {word: status for status, word in STATUS_WORDS.items()}


def _set_status(*, agent_id: int, widget_id: int, word: str) -> str:
    agent = Agent.objects.select_related("widget").get(pk=agent_id, widget_id=widget_id)
    agent = services.set_agent_status(widget=agent.widget, agent=agent, status=STATUS_OF_WORD[word])
    return STATUS_WORDS.get(agent.status, word)


def _session_user_id(session_key: str | None) -> int | None:
    """The user the session logs in now, checked as Django checks a request (expiry, password change,
    inactive user); None once it logged out."""
    if not session_key:
        return None
    engine = import_module(settings.SESSION_ENGINE)
    user = auth.get_user(SimpleNamespace(session=engine.SessionStore(session_key)))
    return user.pk if user.is_authenticated else None


def _heartbeat(*, agent_id: int, user_id: int, session_key: str | None, widget_id: int, socket_id: str) -> int | None:
    """One heartbeat: the close code when the socket's user may no longer hold it (logged out, banned,
    removed), else None."""
    if _session_user_id(session_key) != user_id:
        return CLOSE_UNAUTHORIZED
    if not _operators(user_id).filter(pk=agent_id, widget_id=widget_id).exists():
        return CLOSE_FORBIDDEN
    presence.refresh_socket(agent_id=agent_id, widget_id=widget_id, socket_id=socket_id)
    presence.reap_in_process()
    return None


class AgentConsumer(FramedJsonConsumer):
    metrics_kind = "operator"
    heartbeat_seconds: float = presence.HEARTBEAT_SECONDS

    async def connect(self):
        self.agent: Agent | None = None
        self.socket_id = uuid.uuid4().hex
        self.registered = False
        self.heartbeat_task: asyncio.Task | None = None
        self.presence_lock = asyncio.Lock()

        code, reason, agent = await database_sync_to_async(_resolve)(
            self.scope.get("user"), query_params(self.scope).get("widget"), self.slots
        )
        if code is None:
            self.slots.hold()
        await self.accept()
        if code is not None:
            await self.close(code=code, reason=reason)
            return
        self.agent = agent
        # The group first: nothing the console should see is pushed between "ready" and joining.
        for group in (widget_group(agent.widget_id), agent_group(agent.pk)):
            await self.channel_layer.group_add(group, self.channel_name)
            self.groups.append(group)
        await database_sync_to_async(presence.open_socket)(**self._presence_key())
        self.registered = True
        self.heartbeat_task = asyncio.create_task(self._heartbeats())
        await self.send_json(
            {
                "event": "ready",
                "operator_id": agent.pk,
                "widget_id": agent.widget_id,
                "status": STATUS_WORDS.get(agent.status, "online"),
            }
        )

    async def disconnect(self, code):
        await self._leave()

    def _presence_key(self) -> dict:
        return {"agent_id": self.agent.pk, "widget_id": self.agent.widget_id, "socket_id": self.socket_id}

    async def _leave(self) -> None:
        # The heartbeats stop first, whatever the store does below: a socket whose presence could not
        # be withdrawn (Redis down) lapses after presence.SOCKET_TTL_SECONDS, and the reaper
        # announces it. The withdrawal runs under the lock, so a heartbeat already on its way to the
        # store cannot register the socket again after it was closed (a ghost agent.online).
        if self.heartbeat_task is not None and self.heartbeat_task is not asyncio.current_task():
            self.heartbeat_task.cancel()
        self.heartbeat_task = None
        if self.registered:
            self.registered = False
            async with self.presence_lock:
                await database_sync_to_async(presence.close_socket)(**self._presence_key())

    # --- heartbeats -----------------------------------------------------------------------------------

    async def _heartbeats(self) -> None:
        while True:
            await asyncio.sleep(self.heartbeat_seconds)
            if not await self._beat():
                return

    async def _beat(self) -> bool:
        """Refresh this socket's presence; close it when its user lost the right to it."""
        session = self.scope.get("session")
        async with self.presence_lock:
            if not self.registered:
                return False
            try:
                code = await database_sync_to_async(_heartbeat)(
                    user_id=self.agent.user_id,
                    session_key=getattr(session, "session_key", None),
                    **self._presence_key(),
                )
            except Exception:  # Redis or the database blinked: the next beat retries before the expiry
                logger.warning("presence heartbeat failed", exc_info=True, extra={"agent_id": self.agent.pk})
                return True
        if code is None:
            return True
        await self._leave()
        await self.close(code=code, reason=REVOKED[code])
        return False

    # --- server -> client ---------------------------------------------------------------------------

    async def push(self, event):
        """A frame of apps.chats.realtime (groups of apps.platform.realtime) for the widget's console group."""
        if self.registered:
            await self.send_json(event.get("frame") or {})

    # --- client -> server (frames read by FramedJsonConsumer) -------------------------------------------

    def accepting(self) -> bool:
        return self.registered  # refused or closing: nothing is accepted

    def frame_handlers(self):
        return {"ping": self._ping, "status": self._status}

    async def _status(self, content: dict) -> None:
        word = content.get("status")
        if not isinstance(word, str) or word not in STATUS_OF_WORD:
            await self._error("invalid_status", "`status` is online or away.")
            return
        word = await database_sync_to_async(_set_status)(
            agent_id=self.agent.pk, widget_id=self.agent.widget_id, word=word
        )
        await self.send_json({"event": "status", "status": word})

    async def _ping(self, content: dict) -> None:
        if await self._beat():  # a ping is also a heartbeat
            await self.send_json({"event": "pong"})


def agent_socket_app():
    """The operator socket as routed: Origin checked against ALLOWED_HOSTS, then the Django session."""
    return AllowedHostsOriginValidator(AuthMiddlewareStack(AgentConsumer.as_asgi()))
