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
from urllib.parse import urlsplit, urlunsplit

from django.conf import settings as django_settings
from django.utils import timezone

from apps.webhooks import tasks
from apps.webhooks.models import Attempt, Delivery
from apps.webhooks.tests.receiver import Receiver

ROOT = Path(__file__).resolve().parents[3]


def worker_env(receiver: Receiver) -> dict[str, str]:
    """The environment of a real Celery worker on the test database, broker and receiver."""
    db = django_settings.DATABASES["default"]
    url = urlsplit(os.environ["DATABASE_URL"])
    test_db_url = urlunsplit((url.scheme, url.netloc, "/" + db["NAME"], url.query, url.fragment))
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "DATABASE_URL": test_db_url,
        "REDIS_URL": django_settings.REDIS_URL,
        "OUTBOUND_ALLOW_LOOPBACK": "1",
        "REQUESTS_CA_BUNDLE": str(receiver.ca_path),
        "PYTHONPATH": str(ROOT),
        "LOG_LEVEL": "INFO",
    }


def wait_until_ready(log: Path, process: subprocess.Popen, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"the worker exited ({process.returncode}):\n{log.read_text()[-3000:]}")
        if " ready." in log.read_text(errors="replace"):
            return
        time.sleep(0.1)
    raise AssertionError(f"the worker did not get ready in {timeout} s:\n{log.read_text()[-3000:]}")


def kill_mid_batch(receiver: Receiver, log: Path, *, after_hits: int) -> int:
    """Start a worker (solo pool) on a queue of its own, have it run `deliver_due`, and SIGKILL it once
    the receiver has `after_hits` requests. Returns the requests it had in flight when it died (they
    reach the receiver and are never recorded)."""
    from config.celery import app

    queue = f"kill-test-{uuid.uuid4().hex[:8]}"
    with log.open("w") as out:
        worker = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "config", "worker", "-P", "solo", "-Q", queue]
            + ["--without-gossip", "--without-mingle", "--without-heartbeat", "-l", "info"],
            cwd=ROOT,
            env=worker_env(receiver),
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
