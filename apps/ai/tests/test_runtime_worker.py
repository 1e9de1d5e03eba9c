"""The AI operator at work end to end: PostgreSQL, Redis as the broker, two real Celery workers (each
its own process) and the loopback vendor fake. A visitor message committed in this process reaches a
worker through the on-commit handler and the broker; the answer is read back from the database.

Waits poll the database for a condition with a deadline; nothing sleeps for a fixed time to let
something happen.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from django.conf import settings as django_settings

from apps.ai import phrases, runtime
from apps.ai.models import AiSettings, ReplyClaim
from apps.ai.tests.factories import AiOperatorFactory, AssistantFactory, CredentialFactory
from apps.chats import services as chat_services
from apps.chats.models import Message
from apps.chats.tests.factories import ContactFactory
from tests.llm_fake import FakeLLM, ca_path, server_error
from tests.support.processes import ROOT, wait_until_ready, worker_env

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.django_db(transaction=True)]

ANSWER = "Tea ships in two days."


def _worker_env() -> dict[str, str]:
    # the tests read the tasks' outcomes from the per-task lines
    return worker_env(ca_bundle=ca_path(), log_level="DEBUG")


def _start_worker(queue: str, log: Path) -> subprocess.Popen:
    with log.open("w") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "config", "worker", "-P", "solo", "--concurrency", "1", "-Q", queue,
             "-n", f"{log.stem}@%h", "--without-gossip", "--without-mingle", "--without-heartbeat", "-l", "info"],
            cwd=ROOT,
            env=_worker_env(),
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip


@pytest.fixture(scope="module")
def workers(django_db_setup, tmp_path_factory):
    """Two real workers on a queue of their own (module-wide: they start once)."""
    if not django_settings.USING_POSTGRES or not django_settings.REDIS_URL:
        pytest.skip("needs PostgreSQL and Redis")
    from config.celery import app

    queue = f"ai-reply-test-{uuid.uuid4().hex[:8]}"
    folder = tmp_path_factory.mktemp("ai-workers")
    logs = [folder / "worker-a.log", folder / "worker-b.log"]
    processes = [_start_worker(queue, log) for log in logs]
    try:
        for log, process in zip(logs, processes, strict=True):
            wait_until_ready(log, process, timeout=90.0)
        yield {"queue": queue, "logs": logs}
    finally:
        for process in processes:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in processes:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=10)
        with app.connection_for_write() as conn:
            conn.default_channel.queue_purge(queue)


@pytest.fixture
def through_the_broker(workers, monkeypatch):
    """The on-commit handler sends the tasks to the workers' queue (not run eagerly here)."""
    from celery import current_app

    monkeypatch.setattr(runtime.limits, "QUEUE", workers["queue"])
    before = current_app.conf.task_always_eager
    current_app.conf.task_always_eager = False
    yield workers
    current_app.conf.task_always_eager = before


@pytest.fixture
def fake(monkeypatch, settings):
    settings.OUTBOUND_ALLOW_LOOPBACK = True
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", ca_path())
    with FakeLLM("openai", text=ANSWER) as running:
        yield running


@pytest.fixture
def bot(widget, fake):
    AiSettings.objects.create(widget=widget, enabled=True)
    assistant = AssistantFactory(widget=widget, is_default=True, system_prompt="You sell tea.")
    operator = AiOperatorFactory(assistant=assistant)
    CredentialFactory(widget=widget, api_key=fake.api_key, base_url=fake.base_url)
    return operator


def visitor_writes(widget, text, contact=None):
    contact = contact or ContactFactory(widget=widget)
    return chat_services.post_client_message(widget=widget, contact=contact, data=chat_services.MessageInput(body=text))


def wait_for(condition, timeout=90.0, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def log_offsets(workers) -> list[int]:
    return [log.stat().st_size for log in workers["logs"]]


def new_log_lines(workers, offsets) -> str:
    out = []
    for log, offset in zip(workers["logs"], offsets, strict=True):
        with log.open("rb") as handle:
            handle.seek(offset)
            out.append(handle.read().decode(errors="replace"))
    return "".join(out)


def finished_claims(message_ids):
    return list(ReplyClaim.objects.filter(message_id__in=message_ids).exclude(state="working"))


def test_a_visitor_message_gets_the_fake_providers_answer_from_a_worker(widget, bot, fake, through_the_broker):
    message = visitor_writes(widget, "How long is delivery?")
    replies = wait_for(lambda: list(Message.objects.filter(chat=message.chat, author_kind="ai")), what="the answer")
    assert [(m.body, m.visibility, m.agent_id) for m in replies] == [(ANSWER, "public", bot.pk)]
    assert fake.requests[0].json()["messages"][-1] == {"role": "user", "content": "How long is delivery?"}


def test_two_workers_racing_for_one_message_answer_once(widget, bot, fake, through_the_broker):
    fake.delay = 0.5  # both workers are inside the provider window at once
    offsets = log_offsets(through_the_broker)
    message = visitor_writes(widget, "Hello")
    runtime.enqueue(message.pk)  # the same message's task a second time, for the other worker
    wait_for(lambda: ReplyClaim.objects.filter(message=message, state="answered").exists(), what="the answer")
    wait_for(lambda: "'claimed_elsewhere'" in new_log_lines(through_the_broker, offsets), what="the second task")
    assert Message.objects.filter(chat=message.chat, author_kind="ai").count() == 1
    assert len(fake.requests) == 1
    assert ReplyClaim.objects.get(message=message).attempts == 1


def test_a_second_visitor_message_during_generation_gets_the_one_answer(widget, bot, fake, through_the_broker):
    fake.delay = 3.0  # the second message surely lands while the first answer is generated
    first = visitor_writes(widget, "Hi")
    wait_for(lambda: len(fake.requests) == 1, what="the first provider call")
    second = visitor_writes(widget, "How long is delivery?", contact=first.chat.contact)
    claims = wait_for(
        lambda: len(finished_claims([first.pk, second.pk])) == 2 and finished_claims([first.pk, second.pk])
    )
    assert {c.message_id: c.state for c in claims} == {first.pk: "superseded", second.pk: "answered"}
    [reply] = Message.objects.filter(chat=first.chat, author_kind="ai")
    assert reply.body == ANSWER
    assert [m["content"] for m in fake.requests[-1].json()["messages"][1:]] == ["Hi", "How long is delivery?"]


def test_a_provider_failing_entirely_hands_the_chat_to_people(widget, bot, fake, through_the_broker):
    fake.script(*[server_error(500)] * 4)
    message = visitor_writes(widget, "Где мой заказ?")
    claim = wait_for(lambda: finished_claims([message.pk]), what="the hand-over")[0]
    assert (claim.state, claim.detail) == ("handed_off", "server_error")
    [phrase] = Message.objects.filter(chat=message.chat, author_kind="ai")
    assert phrase.body == phrases.DEFAULTS["handover_offline"]["ru"]
    message.chat.refresh_from_db()
    assert message.chat.awaiting_human_since is not None


def test_shadow_mode_answers_with_a_private_note(widget, bot, fake, through_the_broker):
    AiSettings.objects.filter(widget=widget).update(shadow_mode=True)
    message = visitor_writes(widget, "Hi")
    wait_for(lambda: finished_claims([message.pk]), what="the note")
    [note] = Message.objects.filter(chat=message.chat, author_kind="ai")
    assert (note.body, note.visibility) == (ANSWER, "note")
    message.chat.refresh_from_db()
    assert message.chat.accepted_by_id is None
