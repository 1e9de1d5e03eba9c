"""One Redis connection pool per process for Django's cache, whatever the number of tasks using it.

Django keeps a cache backend per asyncio context under ASGI (its connection handler is
context-local), and its Redis backend builds a connection pool per backend instance: every websocket
consumer and every request would open a Redis connection of its own and leave it to the garbage
collector. The backend's documented `pool_class` option names this class; its `from_url` hands every
backend of the same URL and options the same pool, so the process holds at most `max_connections`
(a caller past it waits up to `timeout` seconds for one to come free, redis-py's
BlockingConnectionPool). redis-py's pools notice a fork and open new connections in the child.

`shared_client()` is a redis-py client on that same pool, for code that needs commands the cache
API lacks (the operators' presence scripts).
"""

from __future__ import annotations

import threading

import redis
from django.conf import settings


class SharedConnectionPool(redis.BlockingConnectionPool):
    _pools: dict[tuple, SharedConnectionPool] = {}
    _lock = threading.Lock()

    @classmethod
    def from_url(cls, url: str, **kwargs) -> SharedConnectionPool:
        key = (url, tuple(sorted((name, repr(value)) for name, value in kwargs.items())))
        with cls._lock:
            pool = cls._pools.get(key)
            if pool is None:
                pool = cls._pools[key] = super().from_url(url, **kwargs)
            return pool


def shared_client(url: str) -> redis.Redis:
    """A client of `url` on the process's pool of the default cache when the cache is on that Redis,
    else on a shared pool of its own with the same options."""
    cache = settings.CACHES["default"]
    return redis.Redis(connection_pool=SharedConnectionPool.from_url(url, **_pool_options(cache)))


def _pool_options(cache: dict) -> dict:
    """The options Django's Redis backend builds its pool with (its own keys left out, its default
    parser added), so this client lands on the backend's pool."""
    options = {key: value for key, value in cache.get("OPTIONS", {}).items() if key not in _BACKEND_KEYS}
    return {"parser_class": redis.connection.DefaultParser, **options}


_BACKEND_KEYS = {"pool_class", "parser_class", "serializer"}
