"""Named budgets: at most `limit` units per sliding `window` seconds, atomic across processes; and
named slots (`Slots`): at most `count` of one kind in flight per key, held in the cache.

One algorithm (an exact sliding log) on two backends:
- Redis (REDIS_URL set): a Lua script over a sorted set, atomic in the server;
- the database (embedded default): rows in `RateLimitHit` under a per-bucket lock (a PostgreSQL
  advisory lock, or SQLite's IMMEDIATE write transaction, which serialises writers).

`consume(..., cost=n)` admits all n units or none ("42 reservations per 3600 s accepted or rejected
whole"). A rejected call records nothing.
"""

from __future__ import annotations

import hashlib
import logging
import math
import random
import secrets
import threading
import time
import uuid
from contextlib import nullcontext
from dataclasses import dataclass
from functools import lru_cache

from django.conf import settings
from django.core.cache import cache
from django.db import connection, transaction

from apps.core.errors import RateLimited

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Decision:
    allowed: bool
    limit: int
    remaining: int
    # Seconds until the oldest counted unit leaves the window (one more unit frees up then).
    reset_after: float
    # Seconds until `cost` units would fit (0 when allowed).
    retry_after: float

    def headers(self) -> dict[str, str]:
        return {
            "X-RateLimit-Limit": str(self.limit),
            "X-RateLimit-Remaining": str(self.remaining),
            "X-RateLimit-Reset": str(math.ceil(self.reset_after)),
        }

    def raise_if_denied(self, detail: str = "Too many requests.", *, error=RateLimited) -> None:
        if not self.allowed:
            raise error(detail, headers={"Retry-After": str(max(1, math.ceil(self.retry_after)))})


_LUA = """
local key = KEYS[1]
local window_ms = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])
local member = ARGV[4]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window_ms)
local count = redis.call('ZCARD', key)
local allowed = 0
if count + cost <= limit then
  for i = 1, cost do
    redis.call('ZADD', key, now, member .. ':' .. i)
  end
  count = count + cost
  allowed = 1
  redis.call('PEXPIRE', key, window_ms)
end
local reset = 0
local oldest = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
if oldest[2] then reset = tonumber(oldest[2]) + window_ms - now end
local retry = 0
if allowed == 0 then
  local k = count + cost - limit - 1
  local entry = redis.call('ZRANGE', key, k, k, 'WITHSCORES')
  if entry[2] then retry = tonumber(entry[2]) + window_ms - now else retry = window_ms end
end
return {allowed, count, reset, retry}
"""


@lru_cache(maxsize=1)
def _script():
    # on the process's one pool to that Redis (the cache's), with its timeouts
    from apps.platform.redis_pool import shared_client

    return shared_client(settings.REDIS_URL).register_script(_LUA)


def _consume_redis(bucket: str, limit: int, window: float, cost: int) -> Decision:
    allowed, count, reset_ms, retry_ms = _script()(
        keys=[f"rl:{bucket}"], args=[int(window * 1000), limit, cost, uuid.uuid4().hex]
    )
    return Decision(
        allowed=bool(allowed),
        limit=limit,
        remaining=max(0, limit - int(count)),
        reset_after=max(0.0, float(reset_ms) / 1000),
        retry_after=max(0.0, float(retry_ms) / 1000),
    )


def _consume_db(bucket: str, limit: int, window: float, cost: int) -> Decision:
    # Imported here: this module is imported before the app registry is ready (settings, spawned
    # test processes), and a model cannot be imported before it.
    from apps.core.models import RateLimitHit

    with transaction.atomic():
        if connection.vendor == "postgresql":
            with connection.cursor() as cur:
                cur.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", [f"rl:{bucket}"])
        now = time.time()
        RateLimitHit.objects.filter(bucket=bucket, at__lte=now - window).delete()
        times = list(RateLimitHit.objects.filter(bucket=bucket).order_by("at").values_list("at", flat=True))
        count = len(times)
        allowed = count + cost <= limit
        if allowed:
            RateLimitHit.objects.bulk_create([RateLimitHit(bucket=bucket, at=now) for _ in range(cost)])
            times.extend([now] * cost)
            count += cost
        reset = (times[0] + window - now) if times else 0.0
        retry = 0.0
        if not allowed:
            k = count + cost - limit - 1
            retry = (times[k] + window - now) if 0 <= k < len(times) else window
    return Decision(
        allowed=allowed,
        limit=limit,
        remaining=max(0, limit - count),
        reset_after=max(0.0, reset),
        retry_after=max(0.0, retry),
    )


# The longest bucket name `RateLimitHit.bucket` holds.
BUCKET_MAX_LENGTH = 200
_DIGEST_LENGTH = 64


def bucket_key(bucket: str) -> str:
    """The name `bucket` is stored under on either backend: itself, or when it is longer than
    BUCKET_MAX_LENGTH or holds what a store refuses (NUL in PostgreSQL text, a lone surrogate in
    UTF-8), its printable head and the SHA-256 of the whole. Names carry parts the client chose (a
    sign-in name, a forwarded address), so a hostile one must neither fail the call nor share a
    bucket with another name."""
    if len(bucket) <= BUCKET_MAX_LENGTH and "\x00" not in bucket:
        try:
            bucket.encode("utf-8")
            return bucket
        except UnicodeEncodeError:
            pass
    head = "".join(ch for ch in bucket[: BUCKET_MAX_LENGTH - _DIGEST_LENGTH - 1] if ch.isprintable())
    return f"{head}#{hashlib.sha256(bucket.encode('utf-8', 'surrogatepass')).hexdigest()}"


def consume(bucket: str, *, limit: int, window: float, cost: int = 1) -> Decision:
    """Admit `cost` units of `bucket` or none. `limit <= 0` means unlimited."""
    if limit <= 0:
        return Decision(True, 0, 0, 0.0, 0.0)
    if cost > limit:  # can never fit: refused without touching the bucket
        return Decision(False, limit, 0, 0.0, window)
    bucket = bucket_key(bucket)
    if settings.REDIS_URL:
        return _consume_redis(bucket, limit, window, cost)
    return _consume_db(bucket, limit, window, cost)


@dataclass(frozen=True)
class Budget:
    """A named budget of the spec, e.g. Budget("widget_cache_purge", 6, 60)."""

    name: str
    limit: int
    window: float

    def consume(self, *parts: object, cost: int = 1) -> Decision:
        key = ":".join([self.name, *(str(p) for p in parts)])
        return consume(key, limit=self.limit, window=self.window, cost=cost)

    def check(self, *parts: object, cost: int = 1, detail: str | None = None, error=RateLimited) -> Decision:
        decision = self.consume(*parts, cost=cost)
        decision.raise_if_denied(detail or f"Limit of {self.limit} per {int(self.window)} s reached.", error=error)
        return decision


@dataclass(frozen=True)
class SignInBudgets:
    """The guess limits of one password sign-in page, spent before the password is checked, in this
    order (a refused attempt consumes none of the later ones): per client address; per address and
    name, which stops one address guessing one password; per name from any address, far above what
    one address may spend. Each page names its own budgets, so one page's attempts spend nothing of
    another's."""

    by_address: Budget
    by_address_name: Budget
    by_name: Budget

    @classmethod
    def of_page(cls, page: str, name_kind: str) -> SignInBudgets:
        return cls(
            Budget(f"{page}:addr", 20, 300),
            Budget(f"{page}:addr_{name_kind}", 10, 900),
            Budget(f"{page}:{name_kind}", 100, 3600),
        )

    def refusal(self, address: str, name: str) -> Decision | None:
        """The first budget that refuses this attempt, or None when all admit it."""
        for budget, parts in (
            (self.by_address, (address,)),
            (self.by_address_name, (address, name)),
            (self.by_name, (name,)),
        ):
            decision = budget.consume(*parts)
            if not decision.allowed:
                return decision
        return None


# --- slots: how many of one kind are in flight -------------------------------------------------------------


class SlotStoreUnavailable(Exception):
    """The cache holding the slots did not answer: the caller fails closed."""


@dataclass(frozen=True)
class Slot:
    key: str
    token: str


# The file cache's `add` is a look then a write, not one step: the threads of a process take and free
# slots one at a time. The embedded default runs one web process (scripts/web.sh), so that is all of
# them; Redis's `add` (SET NX) is atomic across processes by itself.
_file_cache_lock = threading.Lock()


def _slot_guard():
    return _file_cache_lock if not settings.REDIS_URL else nullcontext()


# How many of a key's slots `Slots.acquire` reads in one cache call once its first choice is held.
SCAN_CHUNK = 256


@dataclass(frozen=True)
class Slots:
    """At most `count` holders per key at once, across processes (the default cache: Redis, or the
    embedded default's file cache). Slot i of a key is the cache entry `slot:<name>:<key>:<i>`, taken
    with `add` and holding the holder's token; `release_slots` deletes it only while it still holds
    that token. Each entry expires `ttl` seconds after it was taken or last renewed (`renew_slots`):
    a holder that died frees its slot by then, so a holder that does not renew must finish within
    `ttl`."""

    name: str
    count: int
    ttl: int

    def key(self, *parts: object, index: int = 0) -> str:
        """The cache key of slot `index` of `parts`."""
        return ":".join(["slot", self.name, *(str(p) for p in parts), str(index)])

    def acquire(self, *parts: object, token: str | None = None) -> Slot | None:
        """A free slot of `parts` (now taken, holding `token` or a new random one), or None when all
        `count` are taken. SlotStoreUnavailable when the cache fails.

        One slot chosen at random is tried first: a key with few holders has it free nearly always,
        so taking one is one call whatever `count` is (an operator may allow thousands of sockets
        per address). Only when it is held are the others read, SCAN_CHUNK at a time from a random
        place, and the free ones of a chunk tried in random order, so holders of one key arriving
        together do not all race for the same first free slot, and no call reads more than a
        chunk."""
        token = token or secrets.token_hex(8)
        if self.count < 1:
            return None
        try:
            with _slot_guard():
                first = random.randrange(self.count)
                key = self.key(*parts, index=first)
                if cache.add(key, token, timeout=self.ttl):
                    return Slot(key, token)
                start = random.randrange(self.count)
                for offset in range(0, self.count, SCAN_CHUNK):
                    indices = [(start + offset + i) % self.count for i in range(min(SCAN_CHUNK, self.count - offset))]
                    keys = [self.key(*parts, index=index) for index in indices if index != first]
                    held = cache.get_many(keys)
                    free = [key for key in keys if key not in held]
                    random.shuffle(free)
                    for key in free:
                        if cache.add(key, token, timeout=self.ttl):
                            return Slot(key, token)
        except Exception as exc:  # noqa: BLE001 - any store failure: the caller fails closed
            raise SlotStoreUnavailable(str(exc)) from None
        return None

    def release(self, slot: Slot) -> None:
        """Free `slot` if it is still the holder's (see `release_slots`)."""
        release_slots([slot])


def release_slots(slots: list[Slot]) -> None:
    """Free each slot that still holds its holder's token (one may have expired and been taken
    again), in two cache calls whatever their number."""
    if not slots:
        return
    try:
        with _slot_guard():
            held = cache.get_many([slot.key for slot in slots])
            cache.delete_many([slot.key for slot in slots if held.get(slot.key) == slot.token])
    except Exception:  # noqa: BLE001 - the slots expire by themselves within their ttl
        logger.warning("the slots %s could not be released; they expire by themselves", [s.key for s in slots])


def renew_slots(slots: list[Slot], ttl: int) -> None:
    """Let the slots expire `ttl` seconds from now: a long holder (an open websocket) renews its slots
    while it holds them. On Redis one pipeline of EXPIREs under the keys the cache gave them (the
    cache API renews one key per call); the store's errors propagate."""
    if not slots:
        return
    if settings.REDIS_URL:
        from apps.platform.redis_pool import shared_client

        pipe = shared_client(settings.REDIS_URL).pipeline(transaction=False)
        for slot in slots:
            pipe.expire(cache.make_key(slot.key), ttl)
        pipe.execute()
        return
    for slot in slots:
        cache.touch(slot.key, ttl)


def client_address(request) -> str:
    """The client address rate limits key on (the visitor API, the console's sign-in)."""
    return address_from(request.META.get("REMOTE_ADDR"), request.META.get("HTTP_X_FORWARDED_FOR"))


def address_from(remote_addr: str | None, forwarded_for: str | None) -> str:
    """The client's address: REMOTE_ADDR, or with TRUSTED_PROXY_HOPS = n > 0 the n-th address from
    the right of X-Forwarded-For (each of our proxies appends the address it was reached from). A
    header shorter than that did not pass all our proxies: REMOTE_ADDR then (as werkzeug's ProxyFix)."""
    hops = settings.TRUSTED_PROXY_HOPS
    if hops > 0 and forwarded_for:
        chain = [part.strip() for part in forwarded_for.split(",") if part.strip()]
        if len(chain) >= hops:
            return chain[-hops]
    return remote_addr or "unknown"


def api_token_decision(token) -> Decision:
    """The per-token API budget (API_RATE_LIMIT_PER_MINUTE, default 600 per minute)."""
    return consume(f"api:token:{token.pk}", limit=settings.API_RATE_LIMIT_PER_MINUTE, window=60)
