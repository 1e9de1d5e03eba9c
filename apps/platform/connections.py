"""The database connection of a thread that is about to wait on something else for a long time."""

from django.db import connection


def lend_back_while_waiting() -> None:
    """Give this thread's connection back to the process's pool (Django's `pool` option: the web, and
    the `ai` worker's threads, whose provider calls take seconds) before a long wait outside any
    transaction; the next query takes one again. Many threads then wait at once on a few
    connections. Without a pool the connection is kept: closing it would cost a new PostgreSQL
    backend per wait."""
    if connection.in_atomic_block or "pool" not in connection.settings_dict.get("OPTIONS", {}):
        return
    connection.close()
