"""Live presence of operators: which agents hold an open `/ws/agent/` socket right now.

`online` in the API is this, not the stored `status`. Every socket registers under its agent with an
expiry that its consumer pushes forward (a heartbeat every HEARTBEAT_SECONDS, expiry SOCKET_TTL_SECONDS
ahead), so the sockets of a process that died without disconnecting stop counting once they expire.

Two stores with the same semantics:
- Redis (settings.REDIS_URL): per agent a sorted set `presence:agent:<id>` of socket ids scored by
  expiry; per widget a set `presence:widget:<id>` of the agents announced online; `presence:due`, the
  agents scored by their latest socket expiry, which the reaper scans. Every transition runs as one
  Lua script, so across any number of processes exactly one caller sees "first" and one sees "last".
- in-process (the embedded default): the same structures in a dict under a lock; the single web
  process holds every socket and makes every transition. Each transition also writes the agent's
  latest socket expiry into Django's cache (a file cache shared by every process of the embedded
  default), and every process reads presence from there: a Celery worker deciding a hand-over sees
  the operators whose consoles are open in the web process.

The announced set is the claim that makes events exactly-once: `agent.online` goes out when a
connect adds the agent to it, `agent.offline` when a disconnect or the reaper removes it, so the two
alternate per agent. Reads (`online_agent_ids`, `is_online`) count only unexpired sockets, so a dead
process's agent reads offline at once, and the reaper announces it (once) on its next run.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable

from django.conf import settings
from django.core.cache import cache
from django.db import transaction

from apps.core import events
from apps.core.models import Widget

logger = logging.getLogger(__name__)

HEARTBEAT_SECONDS = 20
SOCKET_TTL_SECONDS = 60
# The embedded web process reaps its own store from the sockets' heartbeats at most this often
# (a Celery worker is another process and cannot see that store).
IN_PROCESS_REAP_SECONDS = 15
REAP_BATCH = 500

# The clock of every expiry (seconds since the epoch); tests move it.
clock = time.time


# --- stores -------------------------------------------------------------------------------------------


class MemoryStore:
    """Presence of the sockets of this process, published to the shared cache for readers in other
    processes."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sockets: dict[int, dict[str, float]] = {}  # agent -> socket -> expiry
        self._announced: dict[int, int] = {}  # agent announced online -> its widget

    @staticmethod
    def widget_key(widget_id: int) -> str:
        return f"presence:widget:{widget_id}"

    @staticmethod
    def agent_key(agent_id: int) -> str:
        return f"presence:agent:{agent_id}"

    def _publish(self, agent_id: int, widget_id: int) -> None:
        """Write the agent's latest expiry (None: offline) for readers in every process. Called under
        the lock: this process is the only writer, so the read-modify-write of the widget's entry
        cannot interleave."""
        sockets = self._sockets.get(agent_id, {})
        expiry = max(sockets.values()) if sockets and agent_id in self._announced else None
        roster = cache.get(self.widget_key(widget_id)) or {}
        if expiry is None:
            roster.pop(agent_id, None)
            cache.delete(self.agent_key(agent_id))
        else:
            roster[agent_id] = expiry
            cache.set(self.agent_key(agent_id), expiry, timeout=None)
        cache.set(self.widget_key(widget_id), roster, timeout=None)

    def _prune(self, agent_id: int, now: float) -> dict[str, float]:
        sockets = self._sockets.get(agent_id, {})
        for socket_id in [s for s, expiry in sockets.items() if expiry <= now]:
            del sockets[socket_id]
        if not sockets:
            self._sockets.pop(agent_id, None)
        return sockets

    def connect(self, *, agent_id: int, widget_id: int, socket_id: str) -> bool:
        now = clock()
        with self._lock:
            self._prune(agent_id, now)
            self._sockets.setdefault(agent_id, {})[socket_id] = now + SOCKET_TTL_SECONDS
            first = agent_id not in self._announced
            self._announced.setdefault(agent_id, widget_id)
            self._publish(agent_id, widget_id)
            return first

    def disconnect(self, *, agent_id: int, widget_id: int, socket_id: str) -> bool:
        now = clock()
        with self._lock:
            self._sockets.get(agent_id, {}).pop(socket_id, None)
            return self._release_if_gone(agent_id, widget_id, now)

    def _release_if_gone(self, agent_id: int, widget_id: int, now: float) -> bool:
        if self._prune(agent_id, now):
            self._publish(agent_id, widget_id)
            return False
        released = self._announced.pop(agent_id, None) is not None
        self._publish(agent_id, widget_id)
        return released

    def reap_expired(self) -> list[tuple[int, int]]:
        now = clock()
        with self._lock:
            claimed = []
            for agent_id, widget_id in list(self._announced.items()):
                if self._release_if_gone(agent_id, widget_id, now):
                    claimed.append((agent_id, widget_id))
            return claimed

    def online_agent_ids(self, widget_id: int) -> set[int]:
        now = clock()
        roster = cache.get(self.widget_key(widget_id)) or {}
        return {agent_id for agent_id, expiry in roster.items() if expiry > now}

    def is_online(self, agent_id: int) -> bool:
        expiry = cache.get(self.agent_key(agent_id))
        return expiry is not None and expiry > clock()


# KEYS: agent sockets, widget's announced agents, due index. ARGV: socket id, now, expiry, due member,
# agent id, key ttl. Returns 1 when this call announced the agent (its first live socket).
_CONNECT = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[2])
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1])
redis.call('EXPIRE', KEYS[1], ARGV[6])
local top = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
redis.call('ZADD', KEYS[3], top[2], ARGV[4])
return redis.call('SADD', KEYS[2], ARGV[5])
"""

# KEYS as above. ARGV: socket id ('' for none: the reaper), now, due member, agent id. Returns 1 when
# this call took the agent's last live socket away and withdrew the announcement.
_LEAVE = """
if ARGV[1] ~= '' then redis.call('ZREM', KEYS[1], ARGV[1]) end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[2])
if redis.call('ZCARD', KEYS[1]) > 0 then
  local top = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
  redis.call('ZADD', KEYS[3], top[2], ARGV[3])
  return 0
end
redis.call('ZREM', KEYS[3], ARGV[3])
return redis.call('SREM', KEYS[2], ARGV[4])
"""


class RedisStore:
    """Presence shared by every process through Redis, on the process's connection pool of the cache
    (apps.platform.redis_pool): a socket's registration and withdrawal open no connection of their own."""

    DUE_KEY = "presence:due"

    def __init__(self, url: str) -> None:
        from apps.platform.redis_pool import shared_client

        self.client = shared_client(url)
        self._connect = self.client.register_script(_CONNECT)
        self._leave = self.client.register_script(_LEAVE)

    @staticmethod
    def agent_key(agent_id: int) -> str:
        return f"presence:agent:{agent_id}"

    @staticmethod
    def widget_key(widget_id: int) -> str:
        return f"presence:widget:{widget_id}"

    def _keys(self, agent_id: int, widget_id: int) -> list[str]:
        return [self.agent_key(agent_id), self.widget_key(widget_id), self.DUE_KEY]

    def connect(self, *, agent_id: int, widget_id: int, socket_id: str) -> bool:
        now = clock()
        args = [socket_id, repr(now), repr(now + SOCKET_TTL_SECONDS), f"{agent_id}:{widget_id}", agent_id]
        return bool(self._connect(keys=self._keys(agent_id, widget_id), args=[*args, SOCKET_TTL_SECONDS * 2]))

    def disconnect(self, *, agent_id: int, widget_id: int, socket_id: str) -> bool:
        return self._release(agent_id, widget_id, socket_id, clock())

    def _release(self, agent_id: int, widget_id: int, socket_id: str, now: float) -> bool:
        args = [socket_id, repr(now), f"{agent_id}:{widget_id}", agent_id]
        return bool(self._leave(keys=self._keys(agent_id, widget_id), args=args))

    def reap_expired(self) -> list[tuple[int, int]]:
        now = clock()
        claimed = []
        # A member that still has live sockets is re-scored into the future by _LEAVE, so each pass
        # sees only agents whose latest expiry has passed; the bound stops a pathological loop.
        for _ in range(100):
            due = self.client.zrangebyscore(self.DUE_KEY, "-inf", repr(now), start=0, num=REAP_BATCH)
            if not due:
                break
            for member in due:
                agent_id, widget_id = (int(part) for part in member.decode().split(":"))
                if self._release(agent_id, widget_id, "", now):
                    claimed.append((agent_id, widget_id))
            if len(due) < REAP_BATCH:
                break
        return claimed

    def online_agent_ids(self, widget_id: int) -> set[int]:
        announced = [int(member) for member in self.client.smembers(self.widget_key(widget_id))]
        if not announced:
            return set()
        live_after = f"({clock()!r}"
        pipe = self.client.pipeline(transaction=False)
        for agent_id in announced:
            pipe.zcount(self.agent_key(agent_id), live_after, "+inf")
        return {agent_id for agent_id, live in zip(announced, pipe.execute(), strict=True) if live}

    def is_online(self, agent_id: int) -> bool:
        return self.client.zcount(self.agent_key(agent_id), f"({clock()!r}", "+inf") > 0


_memory = MemoryStore()
_redis_stores: dict[str, RedisStore] = {}
_redis_lock = threading.Lock()


def store() -> MemoryStore | RedisStore:
    url = settings.REDIS_URL
    if not url:
        return _memory
    with _redis_lock:
        if url not in _redis_stores:
            _redis_stores[url] = RedisStore(url)
        return _redis_stores[url]


# --- the store's operations (no events) ------------------------------------------------------------------


def connect(*, agent_id: int, widget_id: int, socket_id: str) -> bool:
    """Register a live socket; True when it made the agent online (the caller announces it)."""
    return store().connect(agent_id=agent_id, widget_id=widget_id, socket_id=socket_id)


def disconnect(*, agent_id: int, widget_id: int, socket_id: str) -> bool:
    """Drop a socket; True when it took the agent offline (the caller announces it). Idempotent."""
    return store().disconnect(agent_id=agent_id, widget_id=widget_id, socket_id=socket_id)


def heartbeat(*, agent_id: int, widget_id: int, socket_id: str) -> bool:
    """Push the socket's expiry forward. A socket that expired meanwhile (a stalled process) is
    registered again; True when that made the agent online again after the reaper took it offline."""
    return connect(agent_id=agent_id, widget_id=widget_id, socket_id=socket_id)


def online_agent_ids(widget_id: int) -> set[int]:
    """Agents of the widget with at least one unexpired socket."""
    return store().online_agent_ids(widget_id)


def is_online(agent_id: int) -> bool:
    return store().is_online(agent_id)


def reap_expired() -> list[tuple[int, int]]:
    """Claim the offline transition of every announced agent whose sockets all expired: (agent id,
    widget id) pairs, each returned to exactly one caller however many reapers run."""
    return store().reap_expired()


# --- services: the transitions and their events ----------------------------------------------------------


def _announce(type: str, pairs: Iterable[tuple[int, int]]) -> None:
    """Emit `type` for each (agent id, widget id). The transition is already claimed in the store, so a
    failure here loses the event; it is logged, never raised into a socket."""
    pairs = list(pairs)
    if not pairs:
        return
    try:
        widgets = Widget.objects.in_bulk({widget_id for _, widget_id in pairs})
        with transaction.atomic():
            for agent_id, widget_id in pairs:
                widget = widgets.get(widget_id)
                if widget is not None:  # a deleted widget has nobody to tell
                    events.emit(widget, type, operator_id=agent_id)
    except Exception:
        logger.exception("presence event lost", extra={"event_type": type, "agents": [a for a, _ in pairs]})


def open_socket(*, agent_id: int, widget_id: int, socket_id: str) -> bool:
    """A socket of the agent connected: agent.online when it is the agent's first live one."""
    first = connect(agent_id=agent_id, widget_id=widget_id, socket_id=socket_id)
    if first:
        _announce(events.AGENT_ONLINE, [(agent_id, widget_id)])
    return first


def close_socket(*, agent_id: int, widget_id: int, socket_id: str) -> bool:
    """A socket of the agent went away: agent.offline when it was the agent's last live one. Safe to
    call twice and after the reaper already took the agent offline (nothing is emitted again)."""
    last = disconnect(agent_id=agent_id, widget_id=widget_id, socket_id=socket_id)
    if last:
        _announce(events.AGENT_OFFLINE, [(agent_id, widget_id)])
    return last


def refresh_socket(*, agent_id: int, widget_id: int, socket_id: str) -> bool:
    """A heartbeat of a live socket: agent.online again when the agent had been reaped meanwhile."""
    first = heartbeat(agent_id=agent_id, widget_id=widget_id, socket_id=socket_id)
    if first:
        _announce(events.AGENT_ONLINE, [(agent_id, widget_id)])
    return first


def reap_offline_agents() -> int:
    """agent.offline for every agent whose sockets all expired (their process died). Exactly once per
    transition across concurrent reapers. Returns how many agents went offline."""
    claimed = reap_expired()
    _announce(events.AGENT_OFFLINE, claimed)
    return len(claimed)


_last_in_process_reap = 0.0


def reap_in_process() -> int:
    """The embedded default's reaper, run from the web process's own socket heartbeats (throttled);
    with Redis the Celery beat task reaps and this does nothing."""
    global _last_in_process_reap
    if settings.REDIS_URL:
        return 0
    now = clock()
    if now - _last_in_process_reap < IN_PROCESS_REAP_SECONDS:
        return 0
    _last_in_process_reap = now
    return reap_offline_agents()
