"""Operator messages of `ch{id}` chats, deliveries of the webhook engine, posted to the channel's url
against a real HTTPS receiver on loopback: the body and signatures as sent, keyboards as
`message.buttons`, retries with the webhook policy and Retry-After, what is not sent, and a disabled
channel."""

from __future__ import annotations

import json
import threading
import time
from datetime import timedelta

import pytest
from django.db import connection, connections, transaction
from django.utils import timezone

from apps.channels import delivery, services
from apps.channels.models import CustomChannel
from apps.chats import services as chat_services
from apps.chats.models import Message
from apps.chats.tests.factories import MessageFactory
from apps.core import crypto
from apps.webhooks import services as webhooks
from apps.webhooks.models import Attempt, Delivery, Endpoint
from apps.webhooks.tests.receiver import Reply
from tests.support.factories import AgentFactory

pytestmark = pytest.mark.django_db

SECRET = "whsec_" + "A" * 43 + "="


@pytest.fixture
def setup(widget, receiver):
    channel = CustomChannel.objects.create(
        widget=widget, name="App", url=receiver.url("/in"), secret_encrypted=crypto.encrypt_secret(SECRET)
    )
    inbound = services.receive_custom_message(
        widget=widget, channel=channel, external_client_id="u-1", external_channel_id="room-9", text="Hi"
    )
    agent = AgentFactory(widget=widget)
    return channel, inbound.chat, agent


def reply(widget, chat, agent, **fields) -> Message:
    data = chat_services.MessageInput(**{"body": "Hello there", **fields})
    return chat_services.post_agent_message(widget=widget, chat=chat, agent=agent, data=data)


def test_an_operator_message_is_posted_signed_in_the_channel_envelope(widget, setup, receiver):
    channel, chat, agent = setup
    message = reply(widget, chat, agent)
    row = Delivery.objects.get(message=message)
    assert webhooks.deliver_due(concurrency=1, max_seconds=10) == 1
    hit = receiver.wait_for(1)[0]
    body = hit.json()
    assert body == {
        "id": str(row.key),
        "type": "message.created",
        "data": {
            "chat_id": chat.pk,
            "external_client_id": "u-1",
            "external_channel_id": "room-9",
            "message": {"text": "Hello there"},
        },
    }
    assert hit.path == "/in" and hit.header("x-service-event") == "message.created"
    assert hit.header("user-agent") == "ChatWidgetService-Channels/1"
    assert (row.endpoint.owner, row.endpoint.owner_id) == ("custom_channel", channel.pk)
    assert hit.header("x-service-signature") == webhooks.service_signature(SECRET, hit.body)
    assert hit.header("x-service-idempotency-key") == str(row.key)
    ts = int(hit.header("webhook-timestamp"))
    assert hit.header("webhook-signature") == webhooks.standard_signature(SECRET, str(row.key), ts, hit.body)
    row.refresh_from_db()
    assert (row.status, row.attempts, row.last_status_code) == ("delivered", 1, 200)
    assert Attempt.objects.get(delivery=row).status_code == 200


def test_a_keyboard_message_carries_its_buttons(widget, setup, receiver):
    channel, chat, agent = setup
    keyboard = {
        "buttons": [
            {"label": "Track", "url": "https://example.com/t", "style": "primary"},
            {"label": "Help", "url": "https://example.com/h", "style": "secondary"},
        ]
    }
    reply(widget, chat, agent, type=Message.Type.KEYBOARD, body="Pick one", keyboard=keyboard)
    webhooks.deliver_due(concurrency=1, max_seconds=10)
    sent = receiver.wait_for(1)[0].json()["data"]["message"]
    assert sent == {"text": "Pick one", "buttons": keyboard["buttons"]}


def test_client_messages_notes_and_widget_chats_are_not_posted(widget, setup, receiver):
    channel, chat, agent = setup
    services.receive_custom_message(
        widget=widget, channel=channel, external_client_id="u-1", external_channel_id="room-9", text="more"
    )
    reply(widget, chat, agent, visibility=Message.Visibility.NOTE)
    contact = chat_services.create_contact(widget=widget)
    web = chat_services.post_client_message(
        widget=widget, contact=contact, data=chat_services.MessageInput(body="web")
    ).chat
    reply(widget, web, agent)
    assert not Delivery.objects.exists()


def test_a_failed_attempt_is_retried_with_the_webhook_waits(widget, setup, receiver, triggers):
    channel, chat, agent = setup
    receiver.rule = lambda hit: 500 if hit.key_attempt == 1 else 200
    message = reply(widget, chat, agent)
    row = Delivery.objects.get(message=message)
    before = timezone.now()
    assert webhooks.attempt_delivery(row.pk) == "pending"
    row.refresh_from_db()
    assert row.attempts == 1 and row.last_error == "http_500"
    assert timedelta(seconds=9) < row.next_attempt_at - before <= timedelta(seconds=11)
    assert triggers[-1] == 10
    assert webhooks.attempt_delivery(row.pk) == "delivered"
    hits = receiver.wait_for(2)
    assert hits[0].body == hits[1].body and hits[0].key == hits[1].key


def test_a_429_waits_at_least_its_retry_after(widget, setup, receiver, triggers):
    channel, chat, agent = setup
    receiver.rule = lambda hit: 429
    message = reply(widget, chat, agent)
    row = Delivery.objects.get(message=message)
    # The receiver gives no Retry-After header: the webhook wait applies.
    assert webhooks.attempt_delivery(row.pk) == "pending" and triggers[-1] == 10


def test_a_429_with_retry_after_waits_that_long(widget, setup, receiver, triggers):
    channel, chat, agent = setup
    receiver.rule = lambda hit: Reply(status=429, headers={"Retry-After": "120"})
    row = Delivery.objects.get(message=reply(widget, chat, agent))
    before = timezone.now()
    assert webhooks.attempt_delivery(row.pk) == "pending" and triggers[-1] == 120
    row.refresh_from_db()
    assert timedelta(seconds=119) < row.next_attempt_at - before <= timedelta(seconds=121)


def test_retry_after_parsing():
    assert delivery.retry_after(429, {"Retry-After": "120"}, b"") == 120
    assert delivery.retry_after(429, {}, b'{"ok":false,"parameters":{"retry_after":7}}') == 7
    assert delivery.retry_after(429, {"Retry-After": "99999999"}, b"") == delivery.MAX_RETRY_AFTER
    assert delivery.retry_after(429, {"Retry-After": "-1"}, b"") is None
    assert delivery.retry_after(429, {}, b'{"parameters":{"retry_after":"7"}}') is None
    assert delivery.retry_after(503, {"Retry-After": "120"}, b"") is None


def test_four_failed_attempts_end_failed(widget, setup, receiver):
    channel, chat, agent = setup
    receiver.rule = lambda hit: Reply(status=503)
    row = Delivery.objects.get(message=reply(widget, chat, agent))
    results = [webhooks.attempt_delivery(row.pk) for _ in range(4)]
    assert results == ["pending", "pending", "pending", "failed"]
    assert webhooks.attempt_delivery(row.pk) == "gone"
    assert Attempt.objects.filter(delivery=row).count() == 4


def test_a_disabled_channel_gets_nothing(widget, setup, receiver):
    channel, chat, agent = setup
    queued = Delivery.objects.get(message=reply(widget, chat, agent))
    services.set_custom_channel_active(widget=widget, channel=channel, is_active=False)
    reply(widget, chat, agent, body="after")
    assert Delivery.objects.count() == 1  # nothing queued while disabled
    assert webhooks.attempt_delivery(queued.pk) == "failed"
    queued.refresh_from_db()
    assert queued.last_error == "channel_inactive"
    assert receiver.snapshot() == []


def test_a_secret_rotation_reaches_queued_messages(widget, setup, receiver, settings):
    from cryptography.fernet import Fernet

    channel, chat, agent = setup
    row = Delivery.objects.get(message=reply(widget, chat, agent))
    first = Fernet.generate_key().decode()
    settings.WEBHOOK_SECRET_KEYS = [first]
    old = crypto.encrypt_secret(SECRET)
    settings.WEBHOOK_SECRET_KEYS = [Fernet.generate_key().decode(), first]
    CustomChannel.objects.filter(pk=channel.pk).update(secret_encrypted=old)
    assert services.rotate_custom_channel_keys() == 1
    channel.refresh_from_db()
    assert channel.secret_encrypted != old
    assert webhooks.attempt_delivery(row.pk) == "delivered"
    hit = receiver.wait_for(1)[0]
    assert hit.header("x-service-signature") == webhooks.service_signature(SECRET, hit.body)


def test_the_engines_sweeper_sends_due_rows_and_the_body_is_stored_once(widget, setup, receiver):
    from apps.webhooks import tasks

    channel, chat, agent = setup
    reply(widget, chat, agent)
    assert tasks.sweep_deliveries() is True  # (eager: the sweep's deliver_due runs here)
    assert tasks.sweep_deliveries() is False
    assert Delivery.objects.get().status == "delivered"
    stored = json.loads(Delivery.objects.get().body)
    assert receiver.wait_for(1)[0].json() == stored


def test_the_rotation_command_prints_the_count(setup):
    from io import StringIO

    from django.core.management import call_command

    out = StringIO()
    call_command("rotate_channel_keys", stdout=out)
    assert json.loads(out.getvalue()) == {"rotated": 1}


def test_a_batch_reads_its_channels_once_whatever_its_size(widget, setup, receiver):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    channel, chat, agent = setup
    counts = []
    for size in (3, 12):
        for n in range(size):
            reply(widget, chat, agent, body=f"m{n}")
        with CaptureQueriesContext(connection) as queries:
            assert webhooks.deliver_due(max_seconds=20) == size
        counts.append(sum(CustomChannel._meta.db_table in query["sql"] for query in queries))
        # and no field of a row or its endpoint is read on its own afterwards (a deferred field)
        assert not [query["sql"] for query in queries if '"id" = ' in query["sql"] and "LIMIT 21" in query["sql"]]
    receiver.wait_for(15)
    assert counts == [1, 1]  # one lease, one read of its channels
    assert Delivery.objects.filter(status="delivered").count() == 15


@pytest.mark.skipif(connection.vendor != "postgresql", reason="SQLite runs one writer at a time")
@pytest.mark.django_db(transaction=True)
def test_two_first_messages_at_once_make_one_endpoint(widget):
    # given a channel with no endpoint yet and two operator messages in two of its chats
    channel = CustomChannel.objects.create(
        widget=widget, name="App", url="https://hooks.example.com/in", secret_encrypted=crypto.encrypt_secret(SECRET)
    )
    messages = [MessageFactory(chat__contact__widget=widget, author_kind=Message.Author.AGENT) for _ in range(2)]
    made, release = threading.Event(), threading.Event()

    def send(message, *, hold: bool):
        try:
            with transaction.atomic():
                delivery.queue(widget=widget, channel=channel, provider=None, message=message, body="{}")
                if hold:
                    made.set()
                    release.wait(10)
        finally:
            connections.close_all()

    # when the second is queued while the first one's new endpoint is uncommitted
    threads = [
        threading.Thread(target=send, args=(message,), kwargs={"hold": not n}) for n, message in enumerate(messages)
    ]
    threads[0].start()
    assert made.wait(10)
    threads[1].start()
    with connection.cursor() as cursor:
        for _ in range(100):  # the second waits for the first's lock; without one it would not wait
            cursor.execute("SELECT count(*) FROM pg_locks WHERE NOT granted")
            if cursor.fetchone()[0]:
                break
            time.sleep(0.05)
    release.set()
    for thread in threads:
        thread.join(10)
    # then both go to the one endpoint, so the channel's messages keep one queue
    endpoints = Endpoint.objects.filter(widget=widget, owner=delivery.CUSTOM_OWNER, owner_id=channel.pk)
    assert endpoints.count() == 1
    assert set(Delivery.objects.filter(widget=widget).values_list("endpoint", flat=True)) == {endpoints.get().pk}
