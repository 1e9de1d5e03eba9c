"""Races with real threads for tests on PostgreSQL (row locks, unique constraints, skip-locked)."""

import threading

from django.db import connection

__all__ = ["race"]


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
