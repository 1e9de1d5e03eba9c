"""The Celery broker's Redis transport (apps.core.broker.RedisTransport): kombu's, with one command
client per channel instead of one per command."""

import json
import uuid

import pytest


@pytest.mark.redis
@pytest.mark.filterwarnings("ignore::celery.exceptions.AlwaysEagerIgnored")  # send_task is meant to reach the broker
def test_tasks_sent_on_one_client_reach_the_queue(settings, monkeypatch):
    import redis
    from celery import current_app

    from apps.core.broker import RedisChannel

    assert settings.CELERY_BROKER_TRANSPORT == "apps.core.broker:RedisTransport"
    built = []
    create = RedisChannel._create_client

    def counted(self, asynchronous=False):
        client = create(self, asynchronous=asynchronous)
        if not asynchronous:
            built.append(client)
        return client

    monkeypatch.setattr(RedisChannel, "_create_client", counted)
    queue = f"broker-test-{uuid.uuid4().hex[:8]}"
    client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    try:
        with current_app.connection_for_write() as connection:
            channel = connection.default_channel
            assert isinstance(channel, RedisChannel)
            for n in range(3):
                # send_task goes to the broker even with the test settings' eager tasks
                current_app.send_task(
                    "apps.core.tasks.fan_out_batch", args=[[f"id-{n}"]], queue=queue, connection=connection
                )
            assert len(built) == 1  # the stock channel builds a client for each of the three
            first = built[0]
            assert first.connection_pool is channel.pool

            # after a connection error the channel drops its pools: the next command gets a new client
            channel._disconnect_pools()
            current_app.send_task("apps.core.tasks.fan_out_batch", args=[["id-3"]], queue=queue, connection=connection)
            assert len(built) == 2
            assert built[1] is not first and built[1].connection_pool is channel.pool

        sent = [json.loads(raw) for raw in reversed(client.lrange(queue, 0, -1))]
        assert [message["headers"]["task"] for message in sent] == ["apps.core.tasks.fan_out_batch"] * 4
        assert [message["headers"]["argsrepr"] for message in sent] == [f"[['id-{n}']]" for n in range(4)]
    finally:
        client.delete(queue)
