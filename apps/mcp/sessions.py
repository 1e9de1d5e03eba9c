"""What every web process (and every replica) knows of the MCP sessions: a registry of them and the
events of their streams, in Django's cache (Redis when REDIS_URL is set; the file cache on the
embedded default, whose web server is one process).

- A session, `mcp:session:<id>`: the client id of the token that opened it (its owner), the protocol
  version its handshake negotiated, the client's `initialize` parameters, and when it was opened. It
  expires IDLE seconds after its last use: each request touches it, and a request that stays open
  (an event stream) touches it while it runs. A touch only moves the expiry (Redis EXPIRE), never
  rewrites the entry, so a request in flight on one process cannot bring back a session that
  another has just ended; the expiry is the last use plus IDLE. DELETE removes it and its events.
- Its events, for a client that resumes a stream with `Last-Event-ID`: a counter per session,
  `mcp:session:<id>:n`, whose value numbers the next event (the event id), and each event,
  `mcp:session:<id>:e:<n>`, its stream and its JSON-RPC message. A session keeps its newest
  MAX_EVENTS events (storing one drops the one MAX_EVENTS before it), each for EVENT_TTL seconds.
  The events are the session's own: an event id of another session resumes nothing.

The cache is synchronous (and Django's async methods run it on one shared thread): each call runs
in a thread of its own, off the event loop.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import mcp_types as types
from django.core.cache import cache
from mcp.server.streamable_http import GET_STREAM_KEY, EventCallback, EventId, EventMessage, EventStore, StreamId
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION

IDLE = 30 * 60
MAX_EVENTS = 1000
EVENT_TTL = 10 * 60
# How often a resumed stream whose request is still being answered (by any process) looks for its
# next events, and for how long at most.
FOLLOW_EVERY = 0.25
FOLLOW_FOR = 5 * 60

T = TypeVar("T")


def _key(session_id: str, *parts: object) -> str:
    return ":".join(("mcp:session", session_id, *map(str, parts)))


async def _off_loop(call: Callable[..., T], *args: Any) -> T:
    return await asyncio.to_thread(call, *args)


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

    async def open(self, session_id: str, owner: str, client_params: dict[str, Any] | None) -> None:
        session = Session(
            owner=owner,
            protocol_version=negotiated(client_params),
            client_params=client_params,
            created=time.time(),
        )
        await _off_loop(cache.set_many, {_key(session_id): session.__dict__, _key(session_id, "n"): 0}, self.idle)

    async def get(self, session_id: str) -> Session | None:
        entry = await _off_loop(cache.get, _key(session_id))
        return Session(**entry) if isinstance(entry, dict) else None

    async def touch(self, session_id: str) -> bool:
        """Whether the session is still open; if it is, it lives IDLE seconds from now."""

        def touch() -> bool:
            cache.touch(_key(session_id, "n"), self.idle)
            return cache.touch(_key(session_id), self.idle)

        return await _off_loop(touch)

    async def end(self, session_id: str) -> None:
        def end() -> None:
            last = cache.get(_key(session_id, "n")) or 0
            cache.delete_many(
                [_key(session_id), _key(session_id, "n")]
                + [_key(session_id, "e", n) for n in range(max(1, last - MAX_EVENTS + 1), last + 1)]
            )

        await _off_loop(end)


class SessionEvents(EventStore):
    """One session's events (the SDK's EventStore: the transport of the session, in whichever
    process holds it, stores each event it sends and replays them for `Last-Event-ID`)."""

    def __init__(self, session_id: str, *, ttl: float = EVENT_TTL, follow_for: float = FOLLOW_FOR):
        self.session_id = session_id
        self.ttl, self.follow_for = ttl, follow_for
        # The file cache's counter is a read and a write: this process's stores of one session take
        # their numbers one at a time (Redis counts atomically across processes).
        self._numbering = threading.Lock()

    def _store(self, stream_id: StreamId, message: types.JSONRPCMessage | None) -> EventId:
        counter = _key(self.session_id, "n")
        with self._numbering:
            try:
                number = cache.incr(counter)
            except ValueError:  # the session is gone (ended, expired): its last events go nowhere
                cache.add(counter, 0, self.ttl)
                number = cache.incr(counter)
        data = None if message is None else message.model_dump_json(by_alias=True, exclude_unset=True)
        cache.set(_key(self.session_id, "e", number), (stream_id, data), self.ttl)
        if number > MAX_EVENTS:
            cache.delete(_key(self.session_id, "e", number - MAX_EVENTS))
        return str(number)

    async def store_event(self, stream_id: StreamId, message: types.JSONRPCMessage | None) -> EventId:
        return await _off_loop(self._store, stream_id, message)

    def _after(self, number: int) -> list[tuple[int, StreamId, str | None]]:
        """The events stored after the `number`-th that the session still keeps, oldest first, up to
        the first one numbered but not stored yet (its process is writing it)."""
        last = cache.get(_key(self.session_id, "n")) or 0
        numbers = range(max(number + 1, last - MAX_EVENTS + 1), last + 1)
        found = cache.get_many([_key(self.session_id, "e", n) for n in numbers])
        events = []
        for n in numbers:
            if (key := _key(self.session_id, "e", n)) not in found:
                break
            events.append((n, *found[key]))
        return events

    async def replay_events_after(self, last_event_id: EventId, send_callback: EventCallback) -> StreamId | None:
        """Sends the events of `last_event_id`'s stream that followed it. A request's stream whose
        answer is not stored yet is followed until it is (up to `follow_for` seconds): the request
        may be running in another process, whose events reach this one through the store alone."""
        if not last_event_id.isdigit():
            return None
        number = int(last_event_id)
        event = await _off_loop(cache.get, _key(self.session_id, "e", number))
        if event is None:
            return None
        stream_id = event[0]
        answered = stream_id == GET_STREAM_KEY  # the standalone stream has no answer to wait for
        give_up = time.monotonic() + self.follow_for
        while True:
            for seen, stream, data in await _off_loop(self._after, number):
                number = seen
                if stream != stream_id or data is None:
                    continue
                message = types.jsonrpc_message_adapter.validate_json(data, by_name=False)
                await send_callback(EventMessage(message, str(seen)))
                answered = answered or isinstance(message, types.JSONRPCResponse | types.JSONRPCError)
            if answered or time.monotonic() >= give_up:
                return stream_id
            await asyncio.sleep(FOLLOW_EVERY)
