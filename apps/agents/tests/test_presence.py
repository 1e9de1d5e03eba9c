"""Operator presence (apps.agents.presence): live sockets per agent with heartbeats and expiry, and the
agent.online / agent.offline transitions, on the in-process store and on Redis (marked `redis`)."""

import threading
import time

import pytest

from apps.agents import presence
from apps.agents.presence import SOCKET_TTL_SECONDS
from apps.agents.tasks_presence import reap_presence
from apps.agents.tests.factories import AgentFactory

pytestmark = pytest.mark.django_db


class Clock:
    def __init__(self):
        self.now = time.time()

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture(params=["memory", pytest.param("redis", marks=pytest.mark.redis)])
def backend(request, settings, monkeypatch):
    """A fresh presence store: the in-process one, or Redis with no presence keys left over."""
    if request.param == "memory":
        settings.REDIS_URL = ""
        monkeypatch.setattr(presence, "_memory", presence.MemoryStore())
        monkeypatch.setattr(presence, "_last_in_process_reap", 0.0)
    else:
        client = presence.store().client
        keys = list(client.scan_iter("presence:*", count=1000))
        if keys:
            client.delete(*keys)
    return request.param


@pytest.fixture
def clock(monkeypatch):
    fake = Clock()
    monkeypatch.setattr(presence, "clock", fake)
    return fake


@pytest.fixture
def agent(widget):
    return AgentFactory(widget=widget)


def key(agent, socket_id: str) -> dict:
    return {"agent_id": agent.pk, "widget_id": agent.widget_id, "socket_id": socket_id}


def presence_events(captured_events) -> list:
    return [(t, d["operator_id"]) for t, d in captured_events() if t.startswith("agent.")]


# --- sockets and transitions ---------------------------------------------------------------------------


def test_first_socket_announces_online_once(backend, clock, agent, captured_events):
    assert presence.open_socket(**key(agent, "a")) is True
    assert presence.open_socket(**key(agent, "b")) is False

    assert presence_events(captured_events) == [("agent.online", agent.pk)]
    assert presence.online_agent_ids(agent.widget_id) == {agent.pk}
    assert presence.is_online(agent.pk)


def test_closing_one_of_two_sockets_keeps_the_agent_online(backend, clock, agent, captured_events):
    presence.open_socket(**key(agent, "a"))
    presence.open_socket(**key(agent, "b"))

    assert presence.close_socket(**key(agent, "a")) is False

    assert presence_events(captured_events) == [("agent.online", agent.pk)]
    assert presence.online_agent_ids(agent.widget_id) == {agent.pk}


def test_closing_the_last_socket_announces_offline_once(backend, clock, agent, captured_events):
    presence.open_socket(**key(agent, "a"))
    presence.open_socket(**key(agent, "b"))
    presence.close_socket(**key(agent, "a"))

    assert presence.close_socket(**key(agent, "b")) is True
    assert presence.close_socket(**key(agent, "b")) is False  # a repeated close changes nothing

    assert presence_events(captured_events) == [("agent.online", agent.pk), ("agent.offline", agent.pk)]
    assert presence.online_agent_ids(agent.widget_id) == set()
    assert not presence.is_online(agent.pk)


def test_a_killed_process_expires_and_the_reaper_announces_offline_once(backend, clock, agent, captured_events):
    presence.open_socket(**key(agent, "dead-process"))  # never heartbeats, never disconnects

    clock.advance(SOCKET_TTL_SECONDS + 1)

    assert presence.online_agent_ids(agent.widget_id) == set()  # reads count it offline at once
    assert not presence.is_online(agent.pk)
    assert reap_presence() == 1
    assert reap_presence() == 0
    assert presence.close_socket(**key(agent, "dead-process")) is False  # a late close emits nothing
    assert presence_events(captured_events) == [("agent.online", agent.pk), ("agent.offline", agent.pk)]


def test_a_live_socket_keeps_the_agent_online_when_another_process_dies(backend, clock, agent, captured_events):
    presence.open_socket(**key(agent, "dead-process"))
    presence.open_socket(**key(agent, "live"))

    for _ in range(3):
        clock.advance(presence.HEARTBEAT_SECONDS)
        presence.refresh_socket(**key(agent, "live"))
    assert reap_presence() == 0
    assert presence.online_agent_ids(agent.widget_id) == {agent.pk}

    assert presence.close_socket(**key(agent, "live")) is True  # the dead socket has expired by now
    assert presence_events(captured_events) == [("agent.online", agent.pk), ("agent.offline", agent.pk)]


def test_heartbeats_push_the_expiry_forward(backend, clock, agent):
    presence.open_socket(**key(agent, "a"))

    clock.advance(SOCKET_TTL_SECONDS - 10)
    presence.refresh_socket(**key(agent, "a"))
    clock.advance(SOCKET_TTL_SECONDS - 10)

    assert presence.is_online(agent.pk)
    assert presence.reap_expired() == []


def test_a_stalled_socket_heartbeating_after_the_reaper_comes_back_online(backend, clock, agent, captured_events):
    presence.open_socket(**key(agent, "a"))
    clock.advance(SOCKET_TTL_SECONDS + 1)
    reap_presence()

    assert presence.refresh_socket(**key(agent, "a")) is True

    assert presence_events(captured_events) == [
        ("agent.online", agent.pk),
        ("agent.offline", agent.pk),
        ("agent.online", agent.pk),
    ]
    assert presence.online_agent_ids(agent.widget_id) == {agent.pk}


def test_a_new_socket_after_expiry_but_before_the_reaper_emits_nothing(backend, clock, agent, captured_events):
    presence.open_socket(**key(agent, "old"))
    clock.advance(SOCKET_TTL_SECONDS + 1)

    assert presence.open_socket(**key(agent, "new")) is False
    assert reap_presence() == 0

    assert presence_events(captured_events) == [("agent.online", agent.pk)]  # never seen offline
    assert presence.online_agent_ids(agent.widget_id) == {agent.pk}


def test_presence_is_per_widget(backend, clock, agent, other_widget):
    stranger = AgentFactory(widget=other_widget)
    presence.open_socket(**key(agent, "a"))
    presence.open_socket(**key(stranger, "b"))

    assert presence.online_agent_ids(agent.widget_id) == {agent.pk}
    assert presence.online_agent_ids(other_widget.pk) == {stranger.pk}


def test_the_embedded_web_process_reaps_its_own_sockets(backend, clock, agent, captured_events):
    presence.open_socket(**key(agent, "dead"))
    clock.advance(SOCKET_TTL_SECONDS + 1)

    reaped = presence.reap_in_process()

    if backend == "memory":
        assert reaped == 1
        assert presence_events(captured_events)[-1] == ("agent.offline", agent.pk)
    else:
        assert reaped == 0  # with Redis the Celery beat task reaps


# --- races, with real threads ---------------------------------------------------------------------------


def race(count: int, work) -> list:
    barrier = threading.Barrier(count)
    results: list = [None] * count

    def run(index):
        barrier.wait()
        results[index] = work(index)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def stores(backend, count: int) -> list:
    """One store per simulated process: separate Redis clients, or the one in-process store."""
    if backend == "redis":
        from django.conf import settings

        return [presence.RedisStore(settings.REDIS_URL) for _ in range(count)]
    return [presence.store()] * count


def test_concurrent_first_sockets_claim_online_once(backend, clock, agent):
    processes = stores(backend, 12)

    firsts = race(12, lambda i: processes[i].connect(**key(agent, f"s{i}")))

    assert firsts.count(True) == 1


def test_concurrent_last_sockets_and_reapers_claim_offline_once(backend, clock, agent):
    processes = stores(backend, 12)
    for i in range(6):
        processes[i].connect(**key(agent, f"s{i}"))
    clock.advance(1)

    def leave_or_reap(i):
        if i < 6:
            return processes[i].disconnect(**key(agent, f"s{i}"))
        return bool(processes[i].reap_expired())

    lasts = race(12, leave_or_reap)

    assert lasts.count(True) == 1
    assert not presence.is_online(agent.pk)


@pytest.mark.redis
def test_two_processes_share_presence_and_a_killed_one_expires(backend, clock, agent):
    process_a, process_b = stores(backend, 2)

    assert process_a.connect(**key(agent, "a1")) is True
    assert process_b.connect(**key(agent, "b1")) is False
    assert process_a.disconnect(**key(agent, "a1")) is False  # b1 still holds the agent online
    assert process_a.online_agent_ids(agent.widget_id) == {agent.pk}

    clock.advance(SOCKET_TTL_SECONDS + 1)  # process B was killed: b1 never heartbeats again

    assert process_a.online_agent_ids(agent.widget_id) == set()
    assert process_a.reap_expired() == [(agent.pk, agent.widget_id)]
    assert process_b.reap_expired() == []
