"""Slots (apps.core.ratelimit): at most `count` holders per key, across processes, in the default
cache; and the websockets' caps (apps.core.websocket.SocketSlots), which lease them."""

import time

import pytest
from django.core.cache import cache

from apps.core import ratelimit
from apps.core.ratelimit import Slots, release_slots, renew_slots
from apps.core.websocket import SocketSlots


@pytest.fixture(autouse=True)
def _clear_cache():
    cache.clear()
    yield
    cache.clear()


def test_a_key_has_count_slots_and_no_more():
    slots = Slots("test", 3, ttl=60)
    taken = [slots.acquire("k") for _ in range(3)]
    assert all(taken) and len({slot.key for slot in taken}) == 3
    assert slots.acquire("k") is None
    assert slots.acquire("other") is not None  # another key has slots of its own


def test_a_held_first_choice_falls_back_to_a_free_slot(monkeypatch):
    slots = Slots("test", 3, ttl=60)
    held = slots.acquire("k")
    monkeypatch.setattr(ratelimit.random, "randrange", lambda n: int(held.key.rsplit(":", 1)[1]))
    other = slots.acquire("k")
    assert other is not None and other.key != held.key


def test_a_free_first_choice_is_one_cache_call_whatever_the_count(monkeypatch):
    calls = []
    for name in ("add", "get_many"):
        real = getattr(cache, name)
        monkeypatch.setattr(
            cache, name, lambda *a, _real=real, _name=name, **kw: calls.append(_name) or _real(*a, **kw)
        )
    assert Slots("test", 1_000_000, ttl=60).acquire("k") is not None
    assert calls == ["add"]


def test_a_crowded_key_is_read_a_chunk_at_a_time_until_its_last_free_slot(monkeypatch):
    monkeypatch.setattr(ratelimit, "SCAN_CHUNK", 8)
    slots = Slots("test", 30, ttl=60)
    taken = [slots.acquire("k") for _ in range(29)]
    assert all(taken)
    reads = []
    real = cache.get_many
    monkeypatch.setattr(cache, "get_many", lambda keys, **kw: reads.append(len(keys)) or real(keys, **kw))
    last = slots.acquire("k")
    assert last is not None and last.key not in {slot.key for slot in taken}
    assert slots.acquire("k") is None
    assert reads and max(reads) <= 8


def test_release_frees_only_the_holders_own_slot():
    slots = Slots("test", 1, ttl=60)
    mine = slots.acquire("k")
    cache.set(mine.key, "someone else's", 60)  # it expired and was taken again
    slots.release(mine)
    assert cache.get(mine.key) == "someone else's"
    cache.delete(mine.key)
    mine = slots.acquire("k")
    slots.release(mine)
    assert slots.acquire("k") is not None


def test_release_slots_frees_several_at_once():
    slots = Slots("test", 2, ttl=60)
    taken = [slots.acquire("k"), slots.acquire("k")]
    release_slots(taken)
    assert [cache.get(slot.key) for slot in taken] == [None, None]


def test_renewing_keeps_a_slot_past_its_first_ttl():
    slots = Slots("test", 1, ttl=1)
    slot, lapsing = slots.acquire("k"), Slots("lapsing", 1, ttl=1).acquire("k")
    renew_slots([slot], 60)
    time.sleep(1.2)
    assert cache.get(slot.key) == slot.token and cache.get(lapsing.key) is None


def test_a_store_that_fails_refuses_with_slot_store_unavailable(monkeypatch):
    def broken(*args, **kwargs):
        raise ConnectionError("down")

    monkeypatch.setattr(cache, "add", broken)
    with pytest.raises(ratelimit.SlotStoreUnavailable):
        Slots("test", 1, ttl=60).acquire("k")


def test_a_socket_claims_every_cap_or_none():
    full = Slots("ws-address", 1, ttl=60)
    full.acquire("1.2.3.4")
    socket = SocketSlots()
    assert not socket.claim(("session", "s1", 2), ("address", "1.2.3.4", 1))
    assert socket.held == []
    # the session's slot taken on the way was freed: both of its slots are there for the next socket
    assert Slots("ws-session", 2, ttl=60).acquire("s1") and Slots("ws-session", 2, ttl=60).acquire("s1")


def test_a_cap_of_zero_is_no_cap():
    socket = SocketSlots()
    assert socket.claim(("address", "1.2.3.4", 0))
    assert socket.held == []
