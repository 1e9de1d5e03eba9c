"""How many tasks wait in a Celery queue and since when, read from the broker itself at scrape time.

One small reader per kombu transport (`READERS`, keyed by the transport's `driver_type`), each
answering (tasks waiting, when the oldest of them was sent: epoch seconds or None):

- `redis`: kombu keeps a queue as one list per priority step (`queue`, `queue\\x06\\x163`, ...),
  pushed on the left and popped on the right, so the oldest message is the rightmost one; its
  `published_at` header (stamped by `stamp_published_at` when Celery sends a task) is its age.
- `sql` (the embedded default's SQLite broker, kombu's SQLAlchemy transport): the queue's visible
  rows wait; the oldest is the lowest id (ids grow as messages are sent), dated by the same
  `published_at` header in its payload.

A broker on another transport reports no queue families until its reader is added here.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable

from celery import current_app

QueueReading = tuple[int, float | None]
PUBLISHED_AT_HEADER = "published_at"


def stamp_published_at(headers: dict | None = None, **kwargs) -> None:
    """Celery's `before_task_publish` receiver: the moment the task was sent, in its headers."""
    if headers is not None:
        headers.setdefault(PUBLISHED_AT_HEADER, time.time())


def _published_at(raw: bytes | str | None) -> float | None:
    if raw is None:
        return None
    try:
        value = json.loads(raw).get("headers", {}).get(PUBLISHED_AT_HEADER)
    except (ValueError, AttributeError):
        return None
    return float(value) if isinstance(value, int | float) else None


def read_redis(channel, queue: str) -> QueueReading:
    keys = [queue if not step else f"{queue}{channel.sep}{step}" for step in channel.priority_steps]
    with channel.client.pipeline() as pipe:
        for key in keys:
            pipe.llen(key)
            pipe.lindex(key, -1)
        answers = pipe.execute()
    length, oldest = 0, None
    for size, last in zip(answers[::2], answers[1::2], strict=True):
        length += int(size or 0)
        sent = _published_at(last)
        if sent is not None and (oldest is None or sent < oldest):
            oldest = sent
    return length, oldest


def read_sql(channel, queue: str) -> QueueReading:
    session = channel.session
    queue_cls, message_cls = channel.queue_cls, channel.message_cls
    try:
        row = session.query(queue_cls).filter(queue_cls.name == queue).first()
        if row is None:
            return 0, None
        waiting = session.query(message_cls).filter(message_cls.queue_id == row.id, message_cls.visible.is_(True))
        length = waiting.count()
        first = waiting.order_by(message_cls.id).first() if length else None
        return length, _published_at(first.payload) if first is not None else None
    finally:
        session.commit()  # ends the read: SQLite keeps no snapshot open between scrapes


READERS: dict[str, Callable[[object, str], QueueReading]] = {
    "redis": read_redis,
    "sql": read_sql,
}


def read(queues: list[str]) -> dict[str, QueueReading] | None:
    """{queue: (waiting, oldest sent)} for the broker Celery is configured with; None when no reader
    knows its transport. Raises when the broker cannot be reached."""
    with current_app.connection_for_read() as connection:
        reader = READERS.get(connection.transport.driver_type)
        if reader is None:
            return None
        connection.ensure_connection(max_retries=1, timeout=2)
        channel = connection.default_channel
        return {queue: reader(channel, queue) for queue in queues}
