"""Answers in flight survive the `ai` worker's death and its stop: the Procfile's `ai` command line
(a thread pool) in real processes on PostgreSQL + Redis, against a slow loopback provider.

Killed (SIGKILL) mid-answer, the worker leaves its claim `working`; once the lease has run out the
beat job re-drives the message and the next worker answers it once. Stopped (SIGTERM), the worker
gives its claims back at once; honcho then kills it (it would wait for its provider), and the next
worker answers. The lease's passing is simulated by moving `claimed_at` back; the beat job is called
here. Waits poll the database with a deadline.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import uuid
from datetime import timedelta
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.core.cache import cache
from django.utils import timezone

from apps.ai import runtime
from apps.ai.models import ReplyClaim
from apps.ai.tests.test_runtime_worker import (
    ANSWER,
    ROOT,
    _worker_env,
    bot,
    fake,
    visitor_writes,
    wait_for,
)
from apps.chats.models import Message
from tests.support.processes import wait_until_ready

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.django_db(transaction=True)]

__all__ = ["bot", "fake"]  # fixtures shared with test_runtime_worker


def _procfile_ai_argv(queue: str, name: str) -> list[str]:
    """The Procfile's `ai` line, on a queue and under a node name of the test's own."""
    line = next(line for line in (ROOT / "Procfile").read_text().splitlines() if line.startswith("ai:"))
    argv = shlex.split(line.split(":", 1)[1])
    argv[argv.index("-Q") + 1] = queue
    argv[argv.index("-n") + 1] = f"{name}@%h"
    at = argv.index("celery")
    return [*argv[:at], sys.executable, "-m", "celery", *argv[at + 1 :]]


class Workers:
    def __init__(self, queue: str, folder: Path) -> None:
        self.queue, self.folder, self.processes = queue, folder, []

    def start(self, name: str) -> subprocess.Popen:
        log = self.folder / f"{name}.log"
        with log.open("w") as out:
            process = subprocess.Popen(
                _procfile_ai_argv(self.queue, name),
                cwd=ROOT,
                env=_worker_env(),
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.processes.append(process)
        wait_until_ready(log, process, timeout=90.0)
        return process

    def stop_all(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=20)


@pytest.fixture
def workers(tmp_path, monkeypatch):
    if not django_settings.USING_POSTGRES or not django_settings.REDIS_URL:
        pytest.skip("needs PostgreSQL and Redis")
    from celery import current_app

    from config.celery import app

    queue = f"ai-loss-test-{uuid.uuid4().hex[:8]}"
    monkeypatch.setattr(runtime.limits, "QUEUE", queue)
    before = current_app.conf.task_always_eager
    current_app.conf.task_always_eager = False
    cache.clear()
    running = Workers(queue, tmp_path)
    yield running
    running.stop_all()
    current_app.conf.task_always_eager = before
    with app.connection_for_write() as conn:
        conn.default_channel.queue_purge(queue)


def _at_the_provider(fake, message) -> ReplyClaim:
    wait_for(lambda: len(fake.requests) >= 1, what="the provider call")
    return ReplyClaim.objects.get(message=message, state="working")


def _answered(message) -> list[Message]:
    wait_for(lambda: ReplyClaim.objects.filter(message=message, state="answered").exists(), what="the answer")
    return list(Message.objects.filter(chat=message.chat, author_kind="ai"))


def _as_if_older(message, seconds: int) -> None:
    Message.objects.filter(pk=message.pk).update(created_at=timezone.now() - timedelta(seconds=seconds))


def test_an_answer_whose_worker_was_killed_is_answered_once_by_the_next_worker(widget, bot, fake, workers):
    fake.delay = 60.0  # the worker is surely waiting for the provider when it dies
    first = workers.start("ai-a")
    message = visitor_writes(widget, "How long is delivery?")
    claim = _at_the_provider(fake, message)
    os.killpg(first.pid, signal.SIGKILL)
    first.wait(timeout=20)
    assert ReplyClaim.objects.get(pk=claim.pk).state == "working"  # nothing gave it back
    assert runtime.redrive() == 0  # within the lease: it may still be answered
    fake.delay = 0.0
    ReplyClaim.objects.filter(pk=claim.pk).update(claimed_at=timezone.now() - runtime.CLAIM_LEASE)
    _as_if_older(message, 60)
    workers.start("ai-b")
    assert runtime.redrive() == 1
    [reply] = _answered(message)
    assert reply.body == ANSWER
    assert ReplyClaim.objects.get(pk=claim.pk).attempts == 2


def test_a_stopping_worker_gives_its_claims_back_and_the_next_worker_answers_once(widget, bot, fake, workers):
    fake.delay = 60.0
    first = workers.start("ai-a")
    message = visitor_writes(widget, "How long is delivery?")
    claim = _at_the_provider(fake, message)
    os.killpg(first.pid, signal.SIGTERM)  # what honcho sends first
    released = wait_for(
        lambda: ReplyClaim.objects.filter(pk=claim.pk, claimed_at__lt=timezone.now() - runtime.CLAIM_LEASE).exists(),
        timeout=30,
        what="the claim given back",
    )
    assert released
    os.killpg(first.pid, signal.SIGKILL)  # honcho's kill once its grace period is over
    first.wait(timeout=20)
    fake.delay = 0.0
    _as_if_older(message, 60)
    workers.start("ai-b")
    assert runtime.redrive() == 1
    [reply] = _answered(message)
    assert reply.body == ANSWER
