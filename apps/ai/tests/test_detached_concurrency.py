"""The detached test under concurrency, as uvicorn serves it: each request in its own thread-sensitive
context (its own thread for the synchronous hops, as Django's ASGI handler does), many at once on
one event loop, on PostgreSQL outside a test transaction.

No test holds a database connection while it waits for the provider: with many more tests in flight
than AI_TEST_DB_HOPS, the process never has more than AI_TEST_DB_HOPS connections (observed in
pg_stat_activity), none of them in a transaction while the provider holds every test; a gate that
stays shut answers 503 `test_unavailable` with Retry-After, never 500.
"""

from __future__ import annotations

import asyncio
import json
import threading
import uuid

import pytest
from asgiref.sync import ThreadSensitiveContext
from django.core.cache import cache
from django.db import connection
from django.test import AsyncClient

from apps.ai import detached
from apps.ai.api import sync_gate
from apps.ai.tests.factories import AiOperatorFactory, AssistantFactory, CredentialFactory
from apps.core import services as core_services
from apps.core.models import IdempotencyKey
from tests.support.concurrency import direct_connection
from tests.support.factories import WidgetFactory

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

CONCURRENT = 20
HOPS = 3


@pytest.fixture(autouse=True)
def _clear_cache():
    cache.clear()
    yield
    cache.clear()


def _seed(count: int, fake) -> list[dict]:
    """`count` widgets (the spec allows one test in flight per widget), each with an assistant, its AI
    operator, a credential on the fake and a token."""
    out = []
    for _ in range(count):
        widget = WidgetFactory()
        assistant = AssistantFactory(widget=widget)
        AiOperatorFactory(assistant=assistant)
        CredentialFactory(widget=widget, api_key=fake.api_key, base_url=fake.base_url, model="gpt-4o-mini")
        token = core_services.issue_token(widget=widget, scopes=["ai:write", "ai:read"]).plaintext
        out.append({"assistant": assistant.pk, "token": token})
    return out


async def _post(client: AsyncClient, item: dict):
    # Django's ASGI handler gives each request a context of its own (its own thread for sync hops);
    # the test client does not, so the test does.
    async with ThreadSensitiveContext():
        return await client.post(
            f"/api/v1/ai/assistants/{item['assistant']}/test",
            data=json.dumps({"question": "How long is delivery?", "operators": "online"}),
            content_type="application/json",
            headers={"Authorization": f"Bearer {item['token']}", "X-Service-Idempotency-Key": uuid.uuid4().hex},
        )


def _in_fresh_thread(coroutine_function):
    """Run the event loop in a thread of its own: a fresh context, as a server's (the test's thread
    holds the test's database connection in its context)."""
    box: dict = {}

    def run():
        try:
            box["result"] = asyncio.run(coroutine_function())
        except BaseException as exc:  # noqa: BLE001 - re-raised in the test's thread
            box["error"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(timeout=120)
    assert not thread.is_alive(), "the requests did not finish"
    if "error" in box:
        raise box["error"]
    return box["result"]


class _Watcher:
    """Samples this database's backends (other than its own) in pg_stat_activity until stopped."""

    def __init__(self, fake, waiting: int) -> None:
        self._conn = direct_connection()
        self._fake = fake
        self._waiting = waiting
        self.samples: list[int] = []
        self.while_waiting: list[int] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def count(self) -> tuple[int, int]:
        """(backends, of which busy: running a query or inside a transaction)."""
        row = self._conn.execute(
            "SELECT count(*), count(*) FILTER (WHERE state <> 'idle') FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'"
        ).fetchone()
        return int(row[0]), int(row[1])

    def _run(self) -> None:
        while not self._stop.is_set():
            all_waiting = len(self._fake.api_requests) >= self._waiting and not self._fake.answered
            value, busy = self.count()
            # A hop's closed connection shows in pg_stat_activity until its backend has exited, while
            # the next hop's may already be there; on a loaded machine that exit can take a few
            # milliseconds. A connection held still shows on every look: up to five, 10 ms apart.
            looks = 0
            while value > HOPS and looks < 5 and not self._stop.wait(0.01):
                value = min(value, self.count()[0])
                looks += 1
            self.samples.append(value)
            # Still unanswered after the count: no test had left the provider while it was taken.
            if all_waiting and not self._fake.answered:
                self.while_waiting.append(busy)
            self._stop.wait(0.005)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        self._conn.close()


def test_many_tests_in_flight_hold_no_connection_while_the_provider_thinks(llm_fake, settings):
    # given: CONCURRENT widgets and a provider that answers only once every test has reached it
    settings.AI_TEST_DB_HOPS = HOPS
    fake = llm_fake("openai", text="Two days.")
    fake.answered = False
    release = threading.Event()
    record = fake._record

    def record_then_hold(hit):
        record(hit)
        assert release.wait(60)  # a condition, not a sleep: set once all are in flight

    fake._record = record_then_hold
    items = _seed(CONCURRENT, fake)
    connection.close()  # the test's own connection is not counted
    client = AsyncClient()

    async def run_all():
        return await asyncio.gather(*(_post(client, item) for item in items))

    # when: all of them run at once
    with _Watcher(fake, CONCURRENT) as watcher:
        opener = threading.Thread(target=_release_when_all_arrived, args=(fake, watcher, release), daemon=True)
        opener.start()
        try:
            responses = _in_fresh_thread(run_all)
        finally:
            release.set()
        opener.join(timeout=10)

    # then: every test answered; while the provider held all of them no connection was in use (the
    # idle ones wait for the next hop); the process never had more connections than the gate's places
    assert [r.status_code for r in responses] == [200] * CONCURRENT, [r.content[:200] for r in responses]
    assert watcher.while_waiting, "the watcher never saw every test waiting on the provider"
    assert max(watcher.while_waiting) == 0, watcher.while_waiting
    assert max(watcher.samples) <= HOPS, max(watcher.samples)
    assert IdempotencyKey.objects.filter(response_status=200).count() == CONCURRENT


def _release_when_all_arrived(fake, watcher, release) -> None:
    """Let the provider answer once every test is waiting on it and the watcher has sampled that."""
    while len(fake.api_requests) < CONCURRENT or len(watcher.while_waiting) < 3:
        if watcher._stop.wait(0.005):
            break
    fake.answered = True
    release.set()


def test_a_shut_gate_answers_503_with_retry_after_and_claims_nothing(llm_fake, settings):
    # given: the process's hops all taken
    settings.AI_TEST_DB_HOPS = 1
    settings.AI_TEST_DB_WAIT_SECONDS = 0.05
    fake = llm_fake("openai", text="Two days.")
    item = _seed(1, fake)[0]
    connection.close()
    client = AsyncClient()

    async def run():
        gate = sync_gate.gate()
        await gate.acquire()
        try:
            return await _post(client, item)
        finally:
            gate.release()

    # when
    response = _in_fresh_thread(run)

    # then
    assert response.status_code == 503, response.content
    assert response.headers["Content-Type"] == "application/problem+json"
    assert response.json()["code"] == "test_unavailable" and response.headers["Retry-After"] == "1"
    assert not IdempotencyKey.objects.exists() and fake.api_requests == []


def test_a_shut_gate_after_the_provider_still_answers_and_frees_the_slot(llm_fake, settings):
    # given: a test waiting on the provider while every hop place is taken
    settings.AI_TEST_DB_HOPS = 1
    settings.AI_TEST_DB_WAIT_SECONDS = 0.05
    fake = llm_fake("openai", text="Two days.")
    release = threading.Event()
    record = fake._record

    def record_then_hold(hit):
        record(hit)
        assert release.wait(60)

    fake._record = record_then_hold
    item = _seed(1, fake)[0]
    connection.close()
    client = AsyncClient()

    async def run():
        request = asyncio.ensure_future(_post(client, item))
        while not fake.api_requests:  # a condition: the test has reached the provider
            assert not request.done(), request.result().content
            await asyncio.sleep(0.005)
        gate = sync_gate.gate()
        await gate.acquire()
        try:
            release.set()
            return await request
        finally:
            gate.release()

    # when
    try:
        response = _in_fresh_thread(run)
    finally:
        release.set()

    # then: the answer stands, the slot is free, the (informative) result is not recorded
    assert response.status_code == 200, response.content
    assert response.json()["data"]["answer"] == "Two days."
    assert cache.get(detached.IN_FLIGHT.key(IdempotencyKey.objects.get().widget_id)) is None
    assert IdempotencyKey.objects.get().response_status is None
