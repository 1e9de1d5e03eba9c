"""A channel's operator messages survive a delivery worker killed with SIGKILL mid-batch, as the
webhook engine's own rows do (apps/webhooks/tests/test_resilience.py): nothing is lost, and only the
requests in flight when it died are sent twice, with their one idempotency key, correctly signed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
import warnings
from collections import Counter

import pytest
from django.db import connection

from apps.channels import services
from apps.channels.models import CustomChannel
from apps.chats import services as chat_services
from apps.core import crypto
from apps.core.testing.factories import AgentFactory
from apps.webhooks import tasks
from apps.webhooks.models import Attempt, Delivery
from apps.webhooks.tests.receiver import always
from apps.webhooks.tests.test_resilience import (
    ROOT,
    _wait_until_ready,
    _worker_env,
    assert_one_key_per_delivery,
    assert_signed,
    expire_leases_and_backoffs,
)

SECRET = "whsec_" + "C" * 43 + "="
MESSAGES = 120


@pytest.mark.postgres
@pytest.mark.redis
@pytest.mark.django_db(transaction=True)
def test_a_worker_killed_mid_batch_loses_no_channel_message(widget, receiver, triggers, tmp_path):
    from config.celery import app

    # given 120 operator messages queued for a slow custom channel (200 ms) and a real worker
    receiver.rule = always(200, delay=0.2)
    channel = CustomChannel.objects.create(
        widget=widget, name="App", url=receiver.url("/in"), secret_encrypted=crypto.encrypt_secret(SECRET)
    )
    chat = services.receive_custom_message(
        widget=widget, channel=channel, external_client_id="u-1", external_channel_id="room-9", text="Hi"
    ).chat
    agent = AgentFactory(widget=widget)
    for n in range(MESSAGES):
        chat_services.post_agent_message(
            widget=widget, chat=chat, agent=agent, data=chat_services.MessageInput(body=f"answer {n}")
        )
    keys = {str(key) for key in Delivery.objects.values_list("key", flat=True)}
    assert len(keys) == MESSAGES and receiver.hits == []
    assert connection.vendor == "postgresql"
    queue = f"channel-kill-test-{uuid.uuid4().hex[:8]}"
    log = tmp_path / "worker.log"
    with log.open("w") as out:
        worker = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "config", "worker", "-P", "solo", "-Q", queue]
            + ["--without-gossip", "--without-mingle", "--without-heartbeat", "-l", "info"],
            cwd=ROOT,
            env=_worker_env(receiver),
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        _wait_until_ready(log, worker)
        # when the worker runs the engine and is killed once some messages have reached the channel
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # send_task ignores task_always_eager: that is the point
            app.send_task("apps.webhooks.tasks.deliver_due", queue=queue)
        receiver.wait_for(30, timeout=30)
        os.kill(worker.pid, signal.SIGKILL)
        worker.wait(timeout=10)
        seen_at_kill = len(receiver.snapshot())
        time.sleep(0.5)  # in-flight requests finish at the receiver; nobody is left to record them
        in_flight = len(receiver.snapshot()) - Attempt.objects.count()
        assert 0 < seen_at_kill < MESSAGES
        assert Delivery.objects.filter(status="pending").exists()
    finally:
        if worker.poll() is None:
            os.kill(worker.pid, signal.SIGKILL)
            worker.wait(timeout=10)
        with app.connection_for_write() as conn:
            conn.default_channel.queue_purge(queue)
    # when the leases run out and the sweeper takes over in this process
    rounds = 0
    while Delivery.objects.filter(status=Delivery.Status.PENDING).exists():
        rounds += 1
        assert rounds <= 3
        expire_leases_and_backoffs()
        tasks.sweep_deliveries()
    # then no message is lost, and the duplicates are the requests in flight at the kill, each once
    hits = receiver.snapshot()
    assert Counter(Delivery.objects.values_list("status", flat=True)) == {"delivered": MESSAGES}
    assert {hit.key for hit in hits} == keys
    duplicates = {key: n for key, n in Counter(hit.key for hit in hits).items() if n > 1}
    assert sum(n - 1 for n in duplicates.values()) == in_flight <= 32
    assert set(duplicates.values()) <= {2}
    assert_one_key_per_delivery(hits)
    assert_signed(hits, SECRET)
