"""A channel's operator messages survive a delivery worker killed with SIGKILL mid-batch, as the
webhook engine's own rows do (apps/webhooks/tests/test_resilience.py): nothing is lost, and only the
requests in flight when it died are sent twice, with their one idempotency key, correctly signed."""

from __future__ import annotations

from collections import Counter

import pytest
from django.db import connection

from apps.channels import services
from apps.channels.models import CustomChannel
from apps.chats import services as chat_services
from apps.core import crypto
from apps.webhooks.models import Delivery
from apps.webhooks.tests.killed_worker import kill_mid_batch, sweep_until_settled
from apps.webhooks.tests.receiver import always
from apps.webhooks.tests.test_resilience import assert_one_key_per_delivery, assert_signed
from tests.support.factories import AgentFactory

SECRET = "whsec_" + "C" * 43 + "="
MESSAGES = 120


@pytest.mark.postgres
@pytest.mark.redis
@pytest.mark.django_db(transaction=True)
def test_a_worker_killed_mid_batch_loses_no_channel_message(widget, receiver, triggers, tmp_path):
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
    # when a worker (16 places) runs the engine and is killed once some messages have reached the channel ...
    in_flight = kill_mid_batch(receiver, tmp_path / "worker.log", after_hits=30, concurrency=16)
    # ... and the leases run out and the sweeper takes over in this process
    sweep_until_settled()
    # then no message is lost, and the duplicates are the requests in flight at the kill, each once
    hits = receiver.snapshot()
    assert Counter(Delivery.objects.values_list("status", flat=True)) == {"delivered": MESSAGES}
    assert {hit.key for hit in hits} == keys
    duplicates = {key: n for key, n in Counter(hit.key for hit in hits).items() if n > 1}
    assert sum(n - 1 for n in duplicates.values()) == in_flight <= 32
    assert set(duplicates.values()) <= {2}
    assert_one_key_per_delivery(hits)
    assert_signed(hits, SECRET)
