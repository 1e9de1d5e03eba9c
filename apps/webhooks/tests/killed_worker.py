"""A real Celery worker running the delivery engine, killed with SIGKILL mid-batch, and the sweeper
taking over in the test's process: what the kill tests of every endpoint kind share (webhooks,
channel messages)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
import warnings
from datetime import timedelta
from pathlib import Path

from django.utils import timezone

from apps.webhooks import tasks
from apps.webhooks.models import Attempt, Delivery
from apps.webhooks.tests.receiver import Receiver
from tests.support.processes import ROOT, wait_until_ready, worker_env


def kill_mid_batch(receiver: Receiver, log: Path, *, after_hits: int, concurrency: int) -> int:
    """Start a worker (solo pool, WEBHOOK_CONCURRENCY `concurrency`) on a queue of its own, have it run
    `deliver_due`, and SIGKILL it once the receiver has `after_hits` requests. Returns the requests it
    had in flight when it died (they reach the receiver and are never recorded)."""
    from config.celery import app

    queue = f"kill-test-{uuid.uuid4().hex[:8]}"
    with log.open("w") as out:
        worker = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "config", "worker", "-P", "solo", "-Q", queue]
            + ["--without-gossip", "--without-mingle", "--without-heartbeat", "-l", "info"],
            cwd=ROOT,
            env={**worker_env(ca_bundle=str(receiver.ca_path)), "WEBHOOK_CONCURRENCY": str(concurrency)},
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        wait_until_ready(log, worker)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # send_task ignores task_always_eager: that is the point
            app.send_task("apps.webhooks.tasks.deliver_due", queue=queue)
        receiver.wait_for(after_hits, timeout=30)
        os.kill(worker.pid, signal.SIGKILL)
        worker.wait(timeout=10)
        assert worker.returncode == -signal.SIGKILL
        seen_at_kill = len(receiver.snapshot())
        time.sleep(0.5)  # in-flight requests finish at the receiver; nobody is left to record them
        assert seen_at_kill < Delivery.objects.count()
        assert Delivery.objects.filter(status=Delivery.Status.PENDING).exists()
        return len(receiver.snapshot()) - Attempt.objects.count()
    finally:
        if worker.poll() is None:
            os.kill(worker.pid, signal.SIGKILL)
            worker.wait(timeout=10)
        with app.connection_for_write() as conn:
            conn.default_channel.queue_purge(queue)


def expire_leases_and_backoffs() -> int:
    """Stand-in for waiting: every pending row becomes due now."""
    return Delivery.objects.filter(status=Delivery.Status.PENDING).update(
        next_attempt_at=timezone.now() - timedelta(seconds=1)
    )


def sweep_until_settled(rounds: int = 3) -> None:
    """The leases run out and the sweeper takes over in this process, at most `rounds` times."""
    for _ in range(rounds):
        if not Delivery.objects.filter(status=Delivery.Status.PENDING).exists():
            return
        expire_leases_and_backoffs()
        tasks.sweep_deliveries()
    assert not Delivery.objects.filter(status=Delivery.Status.PENDING).exists()
