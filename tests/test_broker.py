"""The Celery broker: kombu's Redis transport with REDIS_URL; on the embedded default kombu's
SQLAlchemy transport on a SQLite file (apps.platform.broker.SQLiteTransport)."""

import json
import time
import uuid

import pytest


@pytest.mark.redis
@pytest.mark.filterwarnings("ignore::celery.exceptions.AlwaysEagerIgnored")  # send_task is meant to reach the broker
def test_tasks_sent_reach_the_queue_in_order(settings):
    import redis
    from celery import current_app

    queue = f"broker-test-{uuid.uuid4().hex[:8]}"
    client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    try:
        with current_app.connection_for_write() as connection:
            for n in range(4):
                # send_task goes to the broker even with the test settings' eager tasks
                current_app.send_task(
                    "apps.core.tasks.fan_out_batch", args=[[f"id-{n}"]], queue=queue, connection=connection
                )

        sent = [json.loads(raw) for raw in reversed(client.lrange(queue, 0, -1))]
        assert [message["headers"]["task"] for message in sent] == ["apps.core.tasks.fan_out_batch"] * 4
        assert [message["headers"]["argsrepr"] for message in sent] == [f"[['id-{n}']]" for n in range(4)]
    finally:
        client.delete(queue)


# --- the embedded default's SQLite broker ------------------------------------------------------------------

SQLITE_RUN_SECONDS = 60


def _sqlite_connection(url: str):
    """A kombu connection configured as settings.py configures the embedded default's broker."""
    from kombu import Connection

    return Connection(url, transport="apps.platform.broker:SQLiteTransport", transport_options=EMBEDDED_OPTIONS)


EMBEDDED_OPTIONS = {"connect_args": {"timeout": 30}}


def _produce(url: str, name: str, stop_at: float, sent) -> None:
    """Publish until `stop_at` as Celery publishes a task: a publish that finds the file locked past
    the busy timeout is retried on a new channel under Celery's `task_publish_retry_policy`, the
    queue declared again there (`declare`), as `send_task` declares it."""
    from celery import current_app

    policy = current_app.conf.task_publish_retry_policy
    count = 0
    with _sqlite_connection(url) as connection:
        queue = connection.SimpleQueue("load")
        while time.monotonic() < stop_at:
            queue.put(
                {"id": f"{name}-{count}", "pad": "x" * 200}, retry=True, retry_policy=policy, declare=[queue.queue]
            )
            count += 1
        queue.close()
    sent.put((name, count))


def _consume(url: str, stop_at: float, received) -> None:
    """Take messages until the producers stopped and the queue ran dry. A take that finds the file
    locked past the busy timeout (one of the transport's `connection_errors`, when the machine is
    loaded) took nothing: the consumer connects again and goes on, as a Celery worker's does."""
    ids = []
    idle_since = None
    while True:
        with _sqlite_connection(url) as connection:
            queue = connection.SimpleQueue("load")
            try:
                while True:
                    try:
                        message = queue.get(block=True, timeout=0.5)
                    except queue.Empty:
                        if time.monotonic() > stop_at:
                            idle_since = idle_since or time.monotonic()
                            if time.monotonic() - idle_since > 3:  # the producers stopped and the queue ran dry
                                break
                        continue
                    idle_since = None
                    ids.append(message.payload["id"])
                    message.ack()
            except connection.connection_errors:
                continue
            finally:
                queue.close()
        break
    received.put(ids)


def test_the_sqlite_broker_delivers_every_message_once_to_concurrent_processes(tmp_path, settings):
    if settings.REDIS_URL:
        pytest.skip("the embedded default's broker: tested in the run without REDIS_URL")
    import multiprocessing

    from apps.platform.broker import prepare_tables, purge_taken_messages

    # given four producer and four consumer processes on one broker file for a minute (its tables
    # made first, as `migrate` makes them)
    url = f"sqlite:///{tmp_path / 'broker.sqlite3'}"
    prepare_tables(url, queues=["load"])
    context = multiprocessing.get_context("fork")
    sent, received = context.Queue(), context.Queue()
    stop_at = time.monotonic() + SQLITE_RUN_SECONDS
    producers = [context.Process(target=_produce, args=(url, f"p{n}", stop_at, sent)) for n in range(4)]
    consumers = [context.Process(target=_consume, args=(url, stop_at, received)) for _ in range(4)]
    try:
        for process in producers + consumers:
            process.start()
        counts = dict(sent.get(timeout=SQLITE_RUN_SECONDS + 120) for _ in producers)
        delivered = [message_id for _ in consumers for message_id in received.get(timeout=SQLITE_RUN_SECONDS + 120)]
        for process in producers + consumers:
            process.join(timeout=30)
    finally:
        # A process left running (a failed assertion above) would hold pytest's exit: multiprocessing
        # joins its children at exit, and a child with unread items in a queue never ends.
        for process in producers + consumers:
            if process.is_alive():
                process.kill()
                process.join()

    # then no process died, and every message sent was delivered exactly once
    assert [process.exitcode for process in producers + consumers] == [0] * 8
    expected = {f"{name}-{n}" for name, count in counts.items() for n in range(count)}
    assert sum(counts.values()) > 100
    assert len(delivered) == len(set(delivered)) == len(expected)
    assert set(delivered) == expected
    # and the messages taken stay only until the purge's retention has passed
    assert purge_taken_messages(url) == 0


@pytest.mark.filterwarnings("ignore::celery.exceptions.AlwaysEagerIgnored")  # send_task is meant to reach the broker
def test_a_task_published_while_the_sqlite_broker_is_locked_is_retried_and_arrives_once(
    tmp_path, settings, monkeypatch
):
    if settings.REDIS_URL:
        pytest.skip("the embedded default's broker: tested in the run without REDIS_URL")
    from celery import current_app
    from kombu.transport import sqlalchemy
    from sqlalchemy.exc import OperationalError

    from apps.platform.broker import prepare_tables

    url = f"sqlite:///{tmp_path / 'broker.sqlite3'}"
    prepare_tables(url, queues=["locked"])
    # given a broker whose first insert finds the file locked past the busy timeout (the channel
    # rolls back and raises, as kombu's `_put` does)
    put = sqlalchemy.Channel._put
    failures = []

    def put_once_locked(channel, queue, payload, **kwargs):
        if not failures:
            failures.append(queue)
            channel.session.rollback()
            raise OperationalError("INSERT INTO kombu_message", {}, Exception("database is locked"))
        return put(channel, queue, payload, **kwargs)

    monkeypatch.setattr(sqlalchemy.Channel, "_put", put_once_locked)

    # when a task is sent through Celery's publish, under the app's own retry policy
    with _sqlite_connection(url) as connection:
        current_app.send_task("apps.core.tasks.fan_out_batch", args=[["id-1"]], queue="locked", connection=connection)

    # then the failed insert was retried and the task is in the queue exactly once
    assert failures == ["locked"]
    with _sqlite_connection(url) as connection:
        queue = connection.SimpleQueue("locked")
        message = queue.get(timeout=2)
        message.ack()
        assert message.headers["task"] == "apps.core.tasks.fan_out_batch"
        with pytest.raises(queue.Empty):
            queue.get(timeout=0.5)
        queue.close()
