"""The migration that moves the channels' operator messages to the webhook engine: every row becomes
a delivery of its channel's endpoint with its state and attempt log; one in flight is sent once
afterwards, with the idempotency key and delivery id its receiver saw, and nothing else is."""

from __future__ import annotations

import json
import uuid

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

from apps.channels import services
from apps.channels.models import CustomChannel
from apps.chats import services as chat_services
from apps.core import crypto
from apps.webhooks import services as webhooks
from apps.webhooks.models import Attempt, Delivery, Endpoint
from tests.support.factories import AgentFactory

BEFORE = [("apps_channels", "0007_verbose_names")]
SECRET = "whsec_" + "B" * 43 + "="


def _latest() -> list[tuple[str, str]]:
    executor = MigrationExecutor(connection)
    return [key for key in executor.loader.graph.leaf_nodes() if key[0] == "apps_channels"]


@pytest.mark.django_db(transaction=True)
def test_operator_messages_in_flight_move_to_the_engine(widget, receiver):
    channel = CustomChannel.objects.create(
        widget=widget, name="App", url=receiver.url("/in"), secret_encrypted=crypto.encrypt_secret(SECRET)
    )
    inbound = services.receive_custom_message(
        widget=widget, channel=channel, external_client_id="u-1", external_channel_id="room-9", text="Hi"
    )
    chat, agent = inbound.chat, AgentFactory(widget=widget)
    messages = [
        chat_services.post_agent_message(
            widget=widget, chat=chat, agent=agent, data=chat_services.MessageInput(body=f"answer {n}")
        )
        for n in range(3)
    ]
    Delivery.objects.all().delete()  # what the engine queued: the rows below stand for the old log
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    try:
        old = executor.loader.project_state(BEFORE).apps
        OldDelivery = old.get_model("apps_channels", "OutboundDelivery")
        OldAttempt = old.get_model("apps_channels", "OutboundAttempt")
        keys = [uuid.uuid4() for _ in range(4)]
        rows = []
        for message, key, (status, attempts) in zip(
            messages, keys, [("delivered", 1), ("failed", 4), ("pending", 2)], strict=False
        ):
            rows.append(
                OldDelivery.objects.create(
                    widget_id=widget.pk,
                    channel=chat.channel,
                    custom_channel_id=channel.pk,
                    chat_id=chat.pk,
                    message_id=message.pk,
                    event_id=key,
                    status=status,
                    body=json.dumps({"id": str(key), "type": "message.created", "data": {"n": message.pk}}),
                    attempts=attempts,
                    next_attempt_at=timezone.now() if status == "pending" else None,
                    last_error="" if status == "delivered" else "http_503",
                )
            )
            for number in range(1, attempts + 1):
                OldAttempt.objects.create(delivery_id=rows[-1].pk, number=number, status_code=503, error="http_503")
        vk = OldDelivery.objects.create(
            widget_id=widget.pk,
            channel="vk",
            chat_id=chat.pk,
            message_id=messages[0].pk,
            event_id=keys[3],
            status="pending",
            body=json.dumps({"community_id": 5, "peer_id": 777, "message": "hi"}),
            attempts=1,
        )
    finally:
        executor = MigrationExecutor(connection)
        executor.loader.build_graph()
        executor.migrate(_latest())

    moved = {row.key: row for row in Delivery.objects.select_related("endpoint")}
    assert [(moved[k].status, moved[k].attempts, moved[k].message_id) for k in keys[:3]] == [
        ("delivered", 1, messages[0].pk),
        ("failed", 4, messages[1].pk),
        ("pending", 2, messages[2].pk),
    ]
    assert {(row.endpoint.owner, row.endpoint.owner_id) for key, row in moved.items() if key != keys[3]} == {
        ("custom_channel", channel.pk)
    }
    assert [Attempt.objects.filter(delivery=moved[k]).count() for k in keys[:3]] == [1, 4, 2]
    # a VK row keeps the random_id its earlier attempt was sent with (VK drops a resend)
    assert (moved[keys[3]].endpoint.owner, moved[keys[3]].endpoint.owner_id) == ("messenger:vk", 0)
    assert json.loads(moved[keys[3]].body)["random_id"] == vk.pk
    assert moved[keys[3]].next_attempt_at is not None
    Delivery.objects.filter(pk=moved[keys[3]].pk).delete()  # no VK account here: not sent in this test
    assert Endpoint.objects.filter(owner="custom_channel").count() == 1

    # the one in flight is sent once, as its receiver saw it before, and nothing else is
    assert webhooks.deliver_due(concurrency=1, max_seconds=10) == 1
    assert webhooks.deliver_due(concurrency=1, max_seconds=10) == 0
    (hit,) = receiver.wait_for(1)
    assert hit.header("x-service-idempotency-key") == hit.header("x-service-delivery") == str(keys[2])
    assert hit.header("x-service-signature") == webhooks.service_signature(SECRET, hit.body)
    moved[keys[2]].refresh_from_db()
    assert (moved[keys[2]].status, moved[keys[2]].attempts) == ("delivered", 3)
    assert len(receiver.snapshot()) == 1
