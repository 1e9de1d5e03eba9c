"""kombu transports of the Celery broker, each a stock transport with one change.

`RedisTransport` (REDIS_URL with the redis:// scheme): kombu's Redis transport, whose channel builds
a new `redis.Redis` client for every command it sends outside its poll loop, publishing included
(`Channel.conn_or_acquire`). A client built is some 170 response callbacks registered one by one,
a large share of the CPU a web process spends per task sent (a message send hands one fan-out task
to the broker). Its channel builds that client once and reuses it. A `redis.Redis` client holds no
connection of its own (each command borrows one from the channel's pool, which the client shares),
so one client is as safe between threads as the clients built per command; a new one is built when
the channel replaces its pool (after a connection error).

`FilesystemTransport` (the embedded default): kombu's filesystem transport, stoppable.

The filesystem transport has no file descriptor to wait on, so the worker runs Celery's polling loop
(celery.worker.loops.synloop), which checks for a shutdown only between calls of
`drain_events(timeout=2.0)`; kombu's virtual transport keeps polling inside that call (sleeping
`polling_interval`, 1 s) until a message or the 2 s are up. A SIGTERM therefore waited up to 3 s
before the warm shutdown even began (honcho, which kills after 5 s, killed the worker on every
stop). This transport polls in short rounds and returns as soon as the worker is asked to stop.
"""

from __future__ import annotations

import time
from contextlib import contextmanager

from celery.worker import state
from kombu.transport import filesystem
from kombu.transport import redis as kombu_redis

POLL_SECONDS = 0.2


def _worker_stopping() -> bool:
    return state.should_stop is not None or state.should_terminate is not None


class FilesystemTransport(filesystem.Transport):
    polling_interval = POLL_SECONDS

    def drain_events(self, connection, timeout=None):
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            remaining = POLL_SECONDS if deadline is None else min(POLL_SECONDS, deadline - time.monotonic())
            if remaining <= 0:
                raise TimeoutError()
            try:
                return super().drain_events(connection, timeout=remaining)
            except TimeoutError:  # socket.timeout
                if _worker_stopping():
                    raise


class RedisChannel(kombu_redis.Channel):
    _command_client = None

    @contextmanager
    def conn_or_acquire(self, client=None):
        if client:
            yield client
            return
        cached = self._command_client
        if cached is None or cached.connection_pool is not self.pool:
            cached = self._command_client = self._create_client()
        yield cached


class RedisTransport(kombu_redis.Transport):
    Channel = RedisChannel
