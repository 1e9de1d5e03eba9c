"""The served public widget config cache, keyed by a per-widget generation number: a purge is one
atomic increment. Each entry keeps the generation it was built under, and a read fetches the
current generation and the entry together (one `get_many`, one round trip to the cache): an entry
of an older generation is rebuilt, so nothing built before a purge is served after it.
Purged by the handlers of apps.widget.handlers; read by selectors.public_config."""

from __future__ import annotations

from collections.abc import Callable

from django.core.cache import cache

CONFIG_TTL = 300


def generation_key(widget_id: int) -> str:
    return f"widget-cache:gen:{widget_id}"


def entry_key(name: str, widget_id: int) -> str:
    # a prefix of its own: no name can make an entry's key the generation's
    return f"widget-cache:entry:{name}:{widget_id}"


def generation(widget_id: int) -> int:
    """The widget's current generation (1 until the first purge)."""
    key = generation_key(widget_id)
    value = cache.get(key)
    if value is None:
        cache.add(key, 1, timeout=None)
        value = cache.get(key) or 1
    return int(value)


def purge_widget_cache(*, widget_id: int) -> None:
    key = generation_key(widget_id)
    try:
        cache.incr(key)
    except ValueError:  # never set yet: nothing cached under generation 1 can survive generation 2
        cache.set(key, 2, timeout=None)


def cached_per_generation(*, name: str, widget_id: int, build: Callable[[], object], ttl: int) -> object:
    """A value derived from the widget's public state, cached under the same generation as the
    config (every purge drops it too) and for at most `ttl` seconds (what no purge announces, such
    as another app's switch, reaches readers within `ttl`)."""
    key = entry_key(name, widget_id)
    found = cache.get_many([generation_key(widget_id), key])
    current = found.get(generation_key(widget_id))
    current = generation(widget_id) if current is None else int(current)
    entry = found.get(key)
    if isinstance(entry, tuple) and len(entry) == 2 and entry[0] == current:
        return entry[1]
    value = build()
    cache.set(key, (current, value), timeout=ttl)
    return value


def cached_public_config(*, widget_id: int, build: Callable[[], dict]) -> dict:
    return cached_per_generation(name="config", widget_id=widget_id, build=build, ttl=CONFIG_TTL)
