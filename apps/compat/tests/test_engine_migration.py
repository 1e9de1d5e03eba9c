"""The migration that moves the bots' CLIENT_MESSAGEs to the webhook engine: every bot gets its
endpoint (URL and signing secret), every CLIENT_MESSAGE its delivery with its state, and one still in
flight is sent once afterwards, with the idempotency key and secret it had, and nothing else is."""

from __future__ import annotations

import uuid

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

from apps.chats import services as chat_services
from apps.compat.models import ClientMessage, CompatBot
from apps.core import crypto
from apps.webhooks import services as webhooks
from apps.webhooks.models import Delivery
from tests.support.factories import AgentFactory

BEFORE = [("compat", "0003_verbose_names")]


def _latest() -> list[tuple[str, str]]:
    executor = MigrationExecutor(connection)
    return [key for key in executor.loader.graph.leaf_nodes() if key[0] == "compat"]


@pytest.mark.django_db(transaction=True)
def test_bots_and_client_messages_in_flight_move_to_the_engine(widget, receiver, triggers):
    contact = chat_services.create_contact(widget=widget)
    messages = [
        chat_services.post_client_message(
            widget=widget, contact=contact, data=chat_services.MessageInput(body=f"message {n}")
        )
        for n in range(3)
    ]
    agent = AgentFactory(widget=widget)
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    try:
        old = executor.loader.project_state(BEFORE).apps
        OldBot, OldDelivery = old.get_model("compat", "CompatBot"), old.get_model("compat", "CompatBotDelivery")
        bot = OldBot.objects.create(
            widget_id=widget.pk,
            agent_id=agent.pk,
            url=receiver.url("/bot"),
            token_key="k" * 16,
            token_hash="0" * 64,
            signing_secret_encrypted=crypto.encrypt_secret("whsec_before"),
        )
        keys = [uuid.uuid4() for _ in messages]
        for message, key, (status, attempts, error) in zip(
            messages, keys, [("delivered", 1, ""), ("failed", 3, "http_500"), ("pending", 1, "timeout")], strict=True
        ):
            OldDelivery.objects.create(
                widget_id=widget.pk,
                bot_id=bot.pk,
                chat_id=message.chat_id,
                message_id=message.pk,
                event_id=key,
                body=f'{{"id":"{key}","event":"CLIENT_MESSAGE"}}',
                status=status,
                attempts=attempts,
                last_error=error,
                created_at=timezone.now(),
            )
    finally:
        executor = MigrationExecutor(connection)
        executor.loader.build_graph()
        executor.migrate(_latest())

    moved = CompatBot.objects.select_related("endpoint").get()
    assert (moved.endpoint.owner, moved.endpoint.owner_id, moved.endpoint.url) == ("compat_bot", bot.pk, bot.url)
    assert crypto.decrypt_secret(moved.endpoint.secret_encrypted) == "whsec_before"
    rows = {row.message_id: row.delivery for row in ClientMessage.objects.select_related("delivery")}
    assert [(rows[m.pk].status, rows[m.pk].attempts, rows[m.pk].key) for m in messages] == [
        ("delivered", 1, keys[0]),
        ("failed", 3, keys[1]),
        ("pending", 1, keys[2]),
    ]
    assert all(row.endpoint_id == moved.endpoint_id and row.event_type == "CLIENT_MESSAGE" for row in rows.values())
    assert [row.message_id for row in rows.values()] == [m.pk for m in messages]

    # the one in flight is due now: the engine's next run sends it once, as it was, and stops there
    assert webhooks.deliver_due(concurrency=1, max_seconds=10) == 1
    assert webhooks.deliver_due(concurrency=1, max_seconds=10) == 0
    (hit,) = receiver.wait_for(1)
    assert hit.header("x-service-idempotency-key") == str(keys[2])
    assert hit.header("x-service-signature") == webhooks.service_signature("whsec_before", hit.body)
    delivery = Delivery.objects.get(key=keys[2])
    assert (delivery.status, delivery.attempts) == ("delivered", 2)
    assert len(receiver.snapshot()) == 1
