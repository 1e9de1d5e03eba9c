"""The whole-call deadline: one watchdog thread per process shuts down the sockets of calls past it."""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from typing import Any

from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

logger = logging.getLogger("apps.platform.outbound")

# Per-read timeouts do not bound a response that trickles one byte at a time. A call with a
# `deadline` registers the sockets it sends on (thread-local) and one watchdog thread per process
# shuts them down when the deadline passes; the blocked read then fails and the call raises
# "deadline_exceeded". Arming costs a dict insert: a thread per call (threading.Timer) cost a third
# of a pooled session's throughput. The watchdog looks every WATCHDOG_TICK seconds, so a deadline
# fires at most that late; it sleeps without waking while no call is armed.

_deadline_local = threading.local()
WATCHDOG_TICK = 0.05


class _Watched:
    def request(self, *args: Any, **kwargs: Any) -> Any:
        result = super().request(*args, **kwargs)  # connects first when the pooled connection is new
        sockets = getattr(_deadline_local, "sockets", None)
        if sockets is not None and self.sock is not None:
            sockets.append(self.sock)
        return result


class _WatchedHTTPConnection(_Watched, HTTPConnection):
    pass


class _WatchedHTTPSConnection(_Watched, HTTPSConnection):
    pass


class _WatchedHTTPConnectionPool(HTTPConnectionPool):
    ConnectionCls = _WatchedHTTPConnection


class _WatchedHTTPSConnectionPool(HTTPSConnectionPool):
    ConnectionCls = _WatchedHTTPSConnection


class _Watchdog:
    """One daemon thread per process (started again in a forked child) firing expired deadlines."""

    def __init__(self) -> None:
        self.armed: dict[int, _Deadline] = {}
        self.wake = threading.Event()
        self.lock = threading.Lock()
        self.pid = 0

    def arm(self, deadline: _Deadline) -> None:
        self.armed[id(deadline)] = deadline
        if self.pid != os.getpid():
            with self.lock:
                if self.pid != os.getpid():
                    self.wake = threading.Event()
                    threading.Thread(target=self._run, args=(self.wake,), name="outbound-deadline", daemon=True).start()
                    self.pid = os.getpid()
        if not self.wake.is_set():  # only on the idle -> busy edge: no lock taken per call otherwise
            self.wake.set()

    def disarm(self, deadline: _Deadline) -> None:
        self.armed.pop(id(deadline), None)

    def _run(self, wake: threading.Event) -> None:
        while True:
            wake.wait()
            while self.armed:
                time.sleep(WATCHDOG_TICK)
                now = time.monotonic()
                for deadline in list(self.armed.values()):
                    # Whoever pops the entry owns it: a call disarming at this moment is not fired.
                    if deadline.expires <= now and self.armed.pop(id(deadline), None) is not None:
                        deadline.fire()
            wake.clear()
            if self.armed:  # armed between the emptiness check and the clear
                wake.set()


_watchdog = _Watchdog()


class _Deadline:
    """Context manager arming the watchdog for the current thread's sends."""

    def __init__(self, seconds: float | None) -> None:
        self.seconds = seconds
        self.fired = False

    def __enter__(self) -> _Deadline:
        if self.seconds is None:
            return self
        self.sockets: list[socket.socket] = []
        _deadline_local.sockets = self.sockets
        self.expires = time.monotonic() + self.seconds
        _watchdog.arm(self)
        return self

    def fire(self) -> None:
        self.fired = True
        for sock in list(self.sockets):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def __exit__(self, *exc: Any) -> None:
        if self.seconds is None:
            return
        _watchdog.disarm(self)
        _deadline_local.sockets = None
