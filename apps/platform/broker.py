"""The embedded default's Celery broker (with REDIS_URL the broker is kombu's stock Redis transport).

`SQLiteTransport` (the embedded default): kombu's SQLAlchemy transport on a SQLite file. Every
publish and every take is one SQLite transaction (kombu takes a message under `BEGIN IMMEDIATE`),
so concurrent producers and consumers in several processes never see a half-written or
half-read message. Its one change is the polling interval: the virtual transport polls an idle
queue every `polling_interval` seconds, 1 s by default, which would add up to a second to every
visitor message's task on the embedded default. The interval is the virtual transport's public
class attribute; the `polling_interval` transport option other virtual transports read cannot
be used here, as the SQLAlchemy transport hands its options to `create_engine`, which refuses it.
Taken messages stay in the table marked invisible;
`purge_taken_messages` removes them (a beat job).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterable
from contextlib import closing
from datetime import datetime, timedelta

from kombu.transport import sqlalchemy

# An idle worker asks its queues this often (one indexed SELECT on the broker file).
POLL_SECONDS = 0.1
# The embedded default's broker URL is SQLAlchemy's own; the transport is the Celery setting
# `broker_transport` (a kombu `sqla+` prefix on the URL would name kombu's class instead).
URL_PREFIX = "sqlite:///"
# Taken messages older than this are deleted; a message is acknowledged long before (a task's
# hard time limit is far shorter).
TAKEN_RETENTION = timedelta(hours=1)


class SQLiteTransport(sqlalchemy.Transport):
    polling_interval = POLL_SECONDS


def prepare_tables(url: str, queues: Iterable[str] = ()) -> None:
    """Create the SQLite broker's tables and the rows of `queues` now. kombu creates each when a
    process first needs it (check, then create), so processes starting together on a new file would
    race and one would fail; `migrate` calls this first (apps.core.apps). A no-op for any other
    broker."""
    if not url.startswith(URL_PREFIX):
        return
    from kombu import Connection, Queue

    with Connection(url, transport=SQLiteTransport) as connection:
        channel = connection.default_channel
        for name in queues:
            Queue(name, channel=channel).declare()


def purge_taken_messages(url: str) -> int:
    """Delete the messages the workers took more than TAKEN_RETENTION ago from the SQLite broker
    at `url` (`sqlite:///path`); returns how many. A no-op for any other broker."""
    if not url.startswith(URL_PREFIX):
        return 0
    path = url.removeprefix(URL_PREFIX)
    if not os.path.exists(path):
        return 0
    # kombu stamps a message when it is taken (`timestamp`, local time without a zone)
    cutoff = datetime.now() - TAKEN_RETENTION  # noqa: DTZ005
    with closing(sqlite3.connect(path, timeout=30)) as db, db:
        try:
            cursor = db.execute(
                "DELETE FROM kombu_message WHERE visible = 0 AND timestamp < ?",
                (cutoff.isoformat(sep=" "),),
            )
        except sqlite3.OperationalError:  # no message was ever sent: kombu has not made its tables
            return 0
        return cursor.rowcount
