"""The served public widget config cache, keyed by a per-widget generation number: a purge is one
atomic increment, and stale entries are simply never read again (they expire on their own).
Purged by the handlers of apps.widget.handlers; read by selectors.public_config."""

from __future__ import annotations

from collections.abc import Callable

from django.core.cache import cache

CONFIG_TTL = 300


def _generation_key(widget_id: int) -> str:
    return f"widget-cache:gen:{widget_id}"


def _generation(widget_id: int) -> int:
    key = _generation_key(widget_id)
    value = cache.get(key)
    if value is None:
        cache.add(key, 1, timeout=None)
        value = cache.get(key) or 1
    return int(value)


def purge_widget_cache(*, widget_id: int) -> None:
    key = _generation_key(widget_id)
    try:
        cache.incr(key)
    except ValueError:  # never set yet: nothing cached under generation 1 can survive generation 2
        cache.set(key, 2, timeout=None)


def cached_per_generation(*, name: str, widget_id: int, build: Callable[[], object], ttl: int) -> object:
    """A value derived from the widget's public state, cached under the same generation as the
    config (every purge drops it too) and for at most `ttl` seconds (what no purge announces, such
    as another app's switch, reaches readers within `ttl`)."""
    key = f"widget-cache:{name}:{widget_id}:{_generation(widget_id)}"
    value = cache.get(key)
    if value is None:
        value = build()
        cache.set(key, value, timeout=ttl)
    return value


def cached_public_config(*, widget_id: int, build: Callable[[], dict]) -> dict:
    key = f"widget-cache:config:{widget_id}:{_generation(widget_id)}"
    value = cache.get(key)
    if value is None:
        value = build()
        cache.set(key, value, timeout=CONFIG_TTL)
    return value
