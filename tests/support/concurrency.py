"""Races with real threads for tests on PostgreSQL (row locks, unique constraints, skip-locked)."""

import threading

import psycopg
from django.db import connection

__all__ = ["database_url", "direct_connection", "race"]


def direct_connection() -> psycopg.Connection:
    """An autocommit psycopg connection to the test database, outside Django's (a watcher of
    pg_stat_activity, a second session that holds locks or terminates backends)."""
    db = connection.settings_dict
    return psycopg.connect(
        dbname=db["NAME"],
        user=db.get("USER") or None,
        password=db.get("PASSWORD") or None,
        host=db.get("HOST") or None,
        port=db.get("PORT") or None,
        autocommit=True,
    )


def database_url() -> str:
    """DATABASE_URL of the test database, for processes a test starts."""
    db = connection.settings_dict
    auth = db["USER"] + (f":{db['PASSWORD']}" if db.get("PASSWORD") else "")
    return f"postgres://{auth}@{db['HOST']}:{db['PORT']}/{db['NAME']}"


def race(workers, timeout=60):
    """Run every worker at once (a barrier), each on its own connection; their results in order."""
    barrier = threading.Barrier(len(workers))
    results = [None] * len(workers)

    def run(index, work):
        try:
            barrier.wait(timeout=30)
            results[index] = work()
        except Exception as exc:  # noqa: BLE001 - reported to the test
            results[index] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i, w)) for i, w in enumerate(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=timeout)
    assert not any(thread.is_alive() for thread in threads), "a racer hung"
    return results
