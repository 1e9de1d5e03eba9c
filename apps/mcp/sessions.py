"""What every web process (and every replica) knows of the MCP sessions: a registry of them and the
events of their streams, in Django's cache framework: the default cache, Redis, when REDIS_URL is
set; on the embedded default, whose web server is one process, a cache in this process's memory
(store()).

- A session, `mcp:session:<id>`: the client id of the token that opened it (its owner), the protocol
  version its handshake negotiated, the client's `initialize` parameters, and when it was opened. It
  expires IDLE seconds after its last use: each request touches it, and a request that stays open
  (an event stream) touches it while it runs. A touch only moves the expiry (Redis EXPIRE), never
  rewrites the entry, so a request in flight on one process cannot bring back a session that
  another has just ended; the expiry is the last use plus IDLE. DELETE removes it and its events.
- Its events, for a client that resumes a stream with `Last-Event-ID`: a counter per session,
  `mcp:session:<id>:n`, the number of its last event, and each event, `mcp:session:<id>:e:<n>`,
  its stream and its JSON-RPC message. An event's id is the session id's first 8 characters and
  its number, so another session's ids resume nothing. A session keeps its newest MAX_EVENTS
  events (storing one drops the one MAX_EVENTS before it), each for EVENT_TTL seconds.

On Redis an event is stored by one script (the counter's INCR, the event's SET, the oldest one's
DEL: one round trip, atomic across processes) on the process's shared client
(apps.platform.redis_pool), as its stream id (JSON) and its message's JSON on a line of their own
(_pack), and events are read back on that client; the counter and every key are the cache's own
(`make_key`), so the registry's reads and its DELETE find them. Elsewhere the same steps go through
the cache API, under its lock.

The cache is synchronous (and Django's async methods run it on one shared thread): each call runs
in a worker thread, off the event loop.
"""

from __future__ import annotations

import asyncio
import functools
import json
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from typing import Any, TypeVar

import mcp_types as types
from django.conf import settings
from django.core.cache import caches
from django.core.cache.backends.base import BaseCache
from django.core.cache.backends.locmem import LocMemCache
from mcp.server.streamable_http import GET_STREAM_KEY, EventCallback, EventId, EventMessage, EventStore, StreamId
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION

IDLE = 30 * 60
MAX_EVENTS = 200
# Sessions whose last move of their expiry a process remembers, at most (Registry.touch).
MAX_TOUCHED = 10_000
EVENT_TTL = 10 * 60
# How often a resumed stream whose request is still being answered (by any process) looks for its
# next events, and for how long at most.
FOLLOW_EVERY = 0.25
FOLLOW_FOR = 5 * 60

T = TypeVar("T")


@functools.cache
def _in_memory() -> BaseCache:
    return LocMemCache("mcp-sessions", {"OPTIONS": {"MAX_ENTRIES": 10_000}})


@functools.cache
def _shared() -> BaseCache:
    return caches.create_connection("default")


def store() -> BaseCache:
    """Where the sessions are: with REDIS_URL the default cache, which every process and replica
    shares. Without it the default cache is a folder of files that keeps at most 300 entries and,
    when full, drops a third of them at random (sessions among them, with every event a session
    stores adding one); the one web process keeps them in its memory instead (the oldest used
    dropped first past 10,000 entries).

    One instance of the default cache serves the whole process (redis-py's connection pool is
    thread-safe). `caches["default"]` would not do here: Django keeps it per context, and each call
    below runs in a worker thread on a copy of its request's context, where it would build a new
    cache object and client on every call."""
    return _shared() if settings.REDIS_URL else _in_memory()


# KEYS[1]: the session's event counter; KEYS[2]: its events' key without their number.
# ARGV: the event, its time to live in seconds, MAX_EVENTS. A counter that is gone (the session ended
# or expired) starts again, living as long as the event: the session's last events go nowhere.
_APPEND = """
if redis.call('EXISTS', KEYS[1]) == 0 then redis.call('SET', KEYS[1], 0, 'EX', ARGV[2]) end
local n = redis.call('INCR', KEYS[1])
redis.call('SET', KEYS[2] .. n, ARGV[1], 'EX', ARGV[2])
local keep = tonumber(ARGV[3])
if n > keep then redis.call('DEL', KEYS[2] .. (n - keep)) end
return n
"""


@functools.cache
def _redis():
    from apps.platform.redis_pool import shared_client

    client = shared_client(settings.REDIS_URL)
    return client, client.register_script(_APPEND)


def _key(session_id: str, *parts: object) -> str:
    return ":".join(("mcp:session", session_id, *map(str, parts)))


async def _off_loop(call: Callable[[], T]) -> T:
    return await asyncio.to_thread(call)


@dataclass(frozen=True)
class Session:
    owner: str
    protocol_version: str
    client_params: dict[str, Any] | None
    created: float


def negotiated(initialize_params: Mapping[str, Any] | None) -> str:
    """The protocol version the SDK's handshake answers `initialize` with (ServerRunner's own rule:
    the client's version when the server speaks it, else the newest handshake version)."""
    requested = (initialize_params or {}).get("protocolVersion")
    return requested if requested in HANDSHAKE_PROTOCOL_VERSIONS else LATEST_HANDSHAKE_VERSION


class Registry:
    """The sessions of every process. `idle`: seconds a session lives after its last use."""

    def __init__(self, idle: float = IDLE):
        self.idle = idle
        # A session's expiry is moved on at most this often by one process (a thirtieth of the idle
        # time: a minute of thirty), so a session's every request costs no write to the store.
        self.touch_every = idle / 30
        self._touched: dict[str, float] = {}

    async def open(self, session_id: str, owner: str, client_params: dict[str, Any] | None) -> None:
        session = Session(
            owner=owner,
            protocol_version=negotiated(client_params),
            client_params=client_params,
            created=time.time(),
        )

        def open_() -> None:
            store().set(_key(session_id), asdict(session), self.idle)
            # The counter may exist already: the answer to `initialize` stored its first event.
            if not store().add(_key(session_id, "n"), 0, self.idle):
                store().touch(_key(session_id, "n"), self.idle)

        await _off_loop(open_)

    async def get(self, session_id: str) -> Session | None:
        entry = await _off_loop(lambda: store().get(_key(session_id)))
        return Session(**entry) if isinstance(entry, dict) else None

    async def touch(self, session_id: str, *, force: bool = False) -> bool:
        """Whether the session is still open; if it is, it lives IDLE seconds from now. Unless
        `force`d, a session this process moved on within `touch_every` seconds is left as it is (it
        lives at least IDLE - touch_every seconds more)."""
        now = time.monotonic()
        if not force and now - self._touched.get(session_id, -math.inf) < self.touch_every:
            return True

        def touch() -> bool:
            store().touch(_key(session_id, "n"), self.idle)
            return store().touch(_key(session_id), self.idle)

        alive = await _off_loop(touch)
        if len(self._touched) > MAX_TOUCHED:
            self._touched = {sid: at for sid, at in self._touched.items() if now - at < self.touch_every}
        if alive:
            self._touched[session_id] = now
        else:
            self._touched.pop(session_id, None)
        return alive

    async def end(self, session_id: str) -> None:
        def end() -> None:
            last = store().get(_key(session_id, "n")) or 0
            store().delete_many(
                [_key(session_id), _key(session_id, "n")]
                + [_key(session_id, "e", n) for n in range(max(1, last - MAX_EVENTS + 1), last + 1)]
            )

        await _off_loop(end)


class SessionEvents(EventStore):
    """One session's events (the SDK's EventStore: the transport of the session, in whichever
    process holds it, stores each event it sends and replays them for `Last-Event-ID`)."""

    def __init__(self, session_id: str, *, ttl: float = EVENT_TTL, follow_for: float = FOLLOW_FOR):
        self.session_id = session_id
        # An event id names its session too: another session's ids resume nothing here.
        self.tag = session_id[:8]
        self.ttl, self.follow_for = ttl, follow_for

    def _store(self, stream_id: StreamId, message: types.JSONRPCMessage | None) -> EventId:
        data = None if message is None else message.model_dump_json(by_alias=True, exclude_unset=True)
        counter = _key(self.session_id, "n")
        if settings.REDIS_URL:
            _, append = _redis()
            cache = store()
            # the event keys' common part, as the cache's key function (prefix:version:key) makes them
            events = cache.make_key(_key(self.session_id, "e", ""))
            keys = [cache.make_key(counter), events]
            number = append(keys=keys, args=[_pack(stream_id, data), int(self.ttl), MAX_EVENTS])
            return f"{self.tag}-{number}"
        try:  # atomic: the in-memory cache counts under its lock
            number = store().incr(counter)
        except ValueError:  # the session is gone (ended, expired): its last events go nowhere
            store().add(counter, 0, self.ttl)
            number = store().incr(counter)
        store().set(_key(self.session_id, "e", number), (stream_id, data), self.ttl)
        if number > MAX_EVENTS:
            store().delete(_key(self.session_id, "e", number - MAX_EVENTS))
        return f"{self.tag}-{number}"

    def _events(self, numbers: range) -> dict[int, tuple[StreamId, str | None]]:
        """The events of `numbers` the session keeps: each one's stream and message."""
        if settings.REDIS_URL:
            client, _ = _redis()
            found = client.mget([store().make_key(_key(self.session_id, "e", n)) for n in numbers]) if numbers else []
            return {n: _unpack(raw) for n, raw in zip(numbers, found, strict=True) if raw is not None}
        keys = {_key(self.session_id, "e", n): n for n in numbers}
        return {keys[key]: tuple(event) for key, event in store().get_many(list(keys)).items()}

    async def store_event(self, stream_id: StreamId, message: types.JSONRPCMessage | None) -> EventId:
        return await _off_loop(lambda: self._store(stream_id, message))

    def _after(self, number: int) -> list[tuple[int, StreamId, str | None]]:
        """The events stored after the `number`-th that the session still keeps, oldest first, up to
        the first one numbered but not stored yet (its process is writing it)."""
        last = store().get(_key(self.session_id, "n")) or 0
        numbers = range(max(number + 1, last - MAX_EVENTS + 1), last + 1)
        found = self._events(numbers)
        events = []
        for n in numbers:
            if n not in found:
                break
            events.append((n, *found[n]))
        return events

    async def replay_events_after(self, last_event_id: EventId, send_callback: EventCallback) -> StreamId | None:
        """Sends the events of `last_event_id`'s stream that followed it. A request's stream whose
        answer is not stored yet is followed until it is (up to `follow_for` seconds): the request
        may be running in another process, whose events reach this one through the store alone."""
        tag, _, digits = last_event_id.rpartition("-")
        if tag != self.tag or not digits.isdigit():
            return None
        number = int(digits)
        event = (await _off_loop(lambda: self._events(range(number, number + 1)))).get(number)
        if event is None:
            return None
        stream_id, data = event
        # the standalone stream has no answer to wait for; a request's stream ends with its answer
        answered = stream_id == GET_STREAM_KEY or (data is not None and _is_answer(data))
        give_up = time.monotonic() + self.follow_for
        while True:
            for seen, stream, data in await _off_loop(functools.partial(self._after, number)):
                number = seen
                if stream != stream_id or data is None:
                    continue
                message = types.jsonrpc_message_adapter.validate_json(data, by_name=False)
                await send_callback(EventMessage(message, f"{self.tag}-{seen}"))
                answered = answered or _is_answer(message)
            if answered or time.monotonic() >= give_up:
                return stream_id
            await asyncio.sleep(FOLLOW_EVERY)


def _pack(stream_id: StreamId, data: str | None) -> str:
    """An event as Redis keeps it: its stream id as JSON (one line), then its message as sent, if any
    (not quoted again: a page of a list would be escaped and unescaped once more for nothing)."""
    head = json.dumps(stream_id)
    return head if data is None else f"{head}\n{data}"


def _unpack(raw: bytes) -> tuple[StreamId, str | None]:
    head, newline, data = raw.decode().partition("\n")
    return json.loads(head), (data if newline else None)


def _is_answer(message: types.JSONRPCMessage | str) -> bool:
    if isinstance(message, str):
        message = types.jsonrpc_message_adapter.validate_json(message, by_name=False)
    return isinstance(message, types.JSONRPCResponse | types.JSONRPCError)
