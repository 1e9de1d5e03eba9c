"""The copies a process keeps of the API tokens it resolved, and how it knows a copy is current.

Every API request resolves its bearer token: the token's row and its widget's, one database round
trip before the request's own work, then the per-token rate limit, one Redis round trip. With Redis
(REDIS_URL) a process keeps the two rows of each token it resolved, by prefix, and trusts a copy
only while the token's *generation* in Redis is the one the copy was read at:

- The generation is read before the rows (`generation()`): a change committed between the two
  leaves the copy with an older generation than the one its commit sets, so the next request reads
  the rows again. A token without one gets its first (`start()`) only after it authenticated, and
  only if no write set one meanwhile; otherwise nothing is kept this time.
- Every write of a token or a widget sets new generations for the tokens it touches (`changed()`):
  before the write, so a write cannot happen without it (Redis down refuses it), and again once the
  write commits, so a copy read while it was uncommitted is not trusted after.
- The check rides on the rate limit's round trip (`ratelimit.api_token_decision(current=...)`):
  the budget is consumed only if the copy is current, in the same script; a request with a current
  copy makes no database query to authenticate. A stale copy is dropped and the rows are read again.
- Generations are random, not counters: a lost key (Redis restarted or flushed) matches no copy,
  and nothing can return to a value a copy holds.
- A copy is kept at most `API_TOKEN_CACHE_SECONDS` (30) whatever Redis says: a bound for a write no
  hook saw (raw SQL; a data migration's historical model) or a Redis failure between a commit and
  its second generation. 0 keeps nothing.
- The rows are kept, not model instances: each request builds its own (`Model.from_db`), so what a
  request changes on its token or widget stays in that request.

Without Redis (the embedded default) nothing is kept: the token is read on every request.

The hooks (`connect()`, from the core app's `ready()`): saving or deleting a token or a widget (the
admin's revoke, the services, cascades) and `update()` of their querysets (`ApiTokenQuerySet`,
`WidgetQuerySet`), except an update of `last_used_at` alone, which only says when the token was
last used.
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction

MAX_COPIES = 4096

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Copy:
    row: tuple  # the token's columns, then its widget's (authentication._TOKEN_BY_PREFIX)
    secret_hash: str
    generation: str
    kept_until: float  # time.monotonic()


_copies: OrderedDict[str, Copy] = OrderedDict()
_lock = threading.Lock()


def enabled() -> bool:
    return bool(settings.REDIS_URL) and settings.API_TOKEN_CACHE_SECONDS > 0


def key(prefix: str) -> str:
    return f"auth:generation:{prefix}"


def _new_generation() -> str:
    return secrets.token_hex(8)


def _client():
    from apps.core import ratelimit

    return ratelimit.redis_client()


def generation(prefix: str) -> str | None:
    """The token's current generation, None if it has none yet: read it before reading the rows."""
    value = _client().get(key(prefix))
    return None if value is None else value.decode()


def start(prefix: str) -> str | None:
    """A first generation for a token that had none when its rows were read (set only if it still
    has none: a write since then has set one, and the rows read may be older than it), or None.
    Only a token that authenticated gets one, so a flood of made-up tokens writes nothing to Redis."""
    generation = _new_generation()
    return generation if _client().set(key(prefix), generation, nx=True) else None


def get(prefix: str) -> Copy | None:
    with _lock:
        copy = _copies.get(prefix)
        if copy is None:
            return None
        if copy.kept_until <= time.monotonic():
            del _copies[prefix]
            return None
        _copies.move_to_end(prefix)
        return copy


def keep(prefix: str, row: tuple, secret_hash: str, generation: str) -> None:
    copy = Copy(row, secret_hash, generation, time.monotonic() + settings.API_TOKEN_CACHE_SECONDS)
    with _lock:
        _copies[prefix] = copy
        _copies.move_to_end(prefix)
        while len(_copies) > MAX_COPIES:
            _copies.popitem(last=False)


def touched(prefix: str, index: int, value) -> None:
    """Column `index` of the kept copy of `prefix` is now `value` (the token's `last_used_at`, which
    no generation follows: it only says when the token was last used)."""
    with _lock:
        copy = _copies.get(prefix)
        if copy is not None:
            row = (*copy.row[:index], value, *copy.row[index + 1 :])
            _copies[prefix] = Copy(row, copy.secret_hash, copy.generation, copy.kept_until)


def drop(prefix: str) -> None:
    with _lock:
        _copies.pop(prefix, None)


def clear() -> None:
    """Forget every copy of this process (tests: their rows vanish with the test's transaction)."""
    with _lock:
        _copies.clear()


def changed(prefixes: Iterable[str], *, using: str = "default") -> list[str]:
    """Tokens `prefixes` (or their widget) are about to be written: new generations now, and again
    when the write's transaction commits (call `written()` after the write: outside a transaction
    the write commits as it runs). Raises if Redis cannot be reached, refusing the write."""
    if not settings.REDIS_URL:
        return []
    prefixes = sorted(set(prefixes))
    if prefixes:
        _set_new(prefixes)
        if transaction.get_connection(using).in_atomic_block:
            transaction.on_commit(lambda: _set_new(prefixes, after_commit=True), using=using)
    return prefixes


def written(prefixes: list[str], *, using: str = "default") -> None:
    """The write `changed()` announced has run: outside a transaction it is committed, so the
    generations are set again now (inside one, at its commit)."""
    if prefixes and not transaction.get_connection(using).in_atomic_block:
        _set_new(prefixes, after_commit=True)


def _set_new(prefixes: list[str], *, after_commit: bool = False) -> None:
    try:
        pipe = _client().pipeline(transaction=False)
        for prefix in prefixes:
            pipe.set(key(prefix), _new_generation())
        pipe.execute()
    except Exception:
        if not after_commit:
            raise
        # the write is committed: answering 500 would misreport it. A copy read while it was
        # uncommitted lives at most API_TOKEN_CACHE_SECONDS.
        log.exception("token generations not renewed after commit: %s", prefixes)


def widget_prefixes(widgets):
    """The prefixes of the tokens of `widgets` (a queryset of widgets, or a widget's id), lazily."""
    from apps.core.models import ApiToken

    if isinstance(widgets, int):
        return ApiToken.objects.filter(widget_id=widgets).values_list("prefix", flat=True)
    return ApiToken.objects.filter(widget__in=widgets.values("pk")).values_list("prefix", flat=True)


_PENDING = "_token_cache_prefixes"


def _token_saving(sender, instance, raw=False, using="default", **kwargs):
    if not raw and instance.pk is not None:  # a new token: no process has a copy of it
        setattr(instance, _PENDING, changed([instance.prefix], using=using))


def _widget_saving(sender, instance, raw=False, using="default", **kwargs):
    if not raw and instance.pk is not None:
        setattr(instance, _PENDING, changed(widget_prefixes(instance.pk), using=using))


def _saved(sender, instance, raw=False, using="default", **kwargs):
    prefixes = instance.__dict__.pop(_PENDING, None)
    if prefixes:
        written(prefixes, using=using)


def connect() -> None:
    """Deleting a widget deletes its tokens (a cascade, inside a transaction): their own signals
    cover them."""
    from django.db.models.signals import post_delete, post_save, pre_delete, pre_save

    from apps.core.models import ApiToken, Widget

    pre_save.connect(_token_saving, sender=ApiToken, dispatch_uid="token_cache.token_saving")
    pre_delete.connect(_token_saving, sender=ApiToken, dispatch_uid="token_cache.token_deleting")
    pre_save.connect(_widget_saving, sender=Widget, dispatch_uid="token_cache.widget_saving")
    post_save.connect(_saved, sender=ApiToken, dispatch_uid="token_cache.token_saved")
    post_delete.connect(_saved, sender=ApiToken, dispatch_uid="token_cache.token_deleted")
    post_save.connect(_saved, sender=Widget, dispatch_uid="token_cache.widget_saved")
