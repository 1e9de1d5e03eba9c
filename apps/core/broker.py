"""The Celery broker of the embedded default: kombu's filesystem transport, stoppable.

The filesystem transport has no file descriptor to wait on, so the worker runs Celery's polling loop
(celery.worker.loops.synloop), which checks for a shutdown only between calls of
`drain_events(timeout=2.0)`; kombu's virtual transport keeps polling inside that call (sleeping
`polling_interval`, 1 s) until a message or the 2 s are up. A SIGTERM therefore waited up to 3 s
before the warm shutdown even began (honcho, which kills after 5 s, killed the worker on every
stop). This transport polls in short rounds and returns as soon as the worker is asked to stop.
"""

from __future__ import annotations

import time

from celery.worker import state
from kombu.transport import filesystem

POLL_SECONDS = 0.2


def _worker_stopping() -> bool:
    return state.should_stop is not None or state.should_terminate is not None


class FilesystemTransport(filesystem.Transport):
    polling_interval = POLL_SECONDS

    def drain_events(self, connection, timeout=None):
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            remaining = POLL_SECONDS if deadline is None else min(POLL_SECONDS, deadline - time.monotonic())
            if remaining <= 0:
                raise TimeoutError()
            try:
                return super().drain_events(connection, timeout=remaining)
            except TimeoutError:  # socket.timeout
                if _worker_stopping():
                    raise
