"""The process's outbound thread (one per process, started again after a fork) and its resolver pool."""

from __future__ import annotations

import contextlib
import logging
import os
import selectors
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from queue import Empty, SimpleQueue
from typing import TYPE_CHECKING

import pycurl

from ..errors import OutboundError
from .call import _reject

if TYPE_CHECKING:
    from .pool import _Pool

logger = logging.getLogger("apps.platform.outbound")

RESOLVERS = 4


class _Driver:
    """The process's outbound thread: runs every pool's transfers (libcurl's socket interface on one
    epoll selector). Other threads talk to it through `post` only."""

    def __init__(self) -> None:
        self.commands: SimpleQueue = SimpleQueue()
        self.selector = selectors.DefaultSelector()
        self.wake_r, self.wake_w = socket.socketpair()
        self.wake_r.setblocking(False)
        self.wake_w.setblocking(False)
        self.selector.register(self.wake_r, selectors.EVENT_READ, None)
        self.pools: set[_Pool] = set()
        self.waiting = False  # in select: a new command must wake it
        self.readable: dict[int, float] = {}  # descriptor -> when it last had bytes to read
        self.resolver = ThreadPoolExecutor(max_workers=RESOLVERS, thread_name_prefix="outbound-resolve")
        self.thread = threading.Thread(target=self._run, name="outbound-curl", daemon=True)
        self.thread.start()

    def post(self, command: tuple) -> None:
        self.commands.put(command)
        # Woken only while it waits in select: an awake driver drains the queue before it waits
        # again (it raises `waiting` first, then looks at the queue, so no command is left behind).
        if self.waiting:
            self.waiting = False  # one byte wakes it: the calls posted until it runs need none
            with contextlib.suppress(BlockingIOError):  # a full wake-up buffer already wakes it
                self.wake_w.send(b"\0")

    def watch(self, pool: _Pool, fd: int, what: int) -> None:
        """libcurl's socket callback: follow `fd` for what it waits on (or stop following it)."""
        if what == pycurl.POLL_REMOVE:
            self.readable.pop(fd, None)
            with contextlib.suppress(KeyError, ValueError, OSError):
                self.selector.unregister(fd)
            return
        events = 0
        if what & pycurl.POLL_IN:
            events |= selectors.EVENT_READ
        if what & pycurl.POLL_OUT:
            events |= selectors.EVENT_WRITE
        try:
            self.selector.modify(fd, events, pool)
        except KeyError:
            self.selector.register(fd, events, pool)
        except (ValueError, OSError):  # a reused descriptor number the selector still knew
            with contextlib.suppress(KeyError, ValueError, OSError):
                self.selector.unregister(fd)
            self.selector.register(fd, events, pool)

    def _run(self) -> None:
        while True:
            try:
                self._step()
            except Exception:  # never let the driver die: every caller would wait forever
                logger.exception("outbound driver step failed")

    def _step(self) -> None:
        self._drain()
        timeout = self._timeout()
        self.waiting = True
        if not self.commands.empty():  # posted after the drain, before `waiting` was raised
            timeout = 0
        ready = self.selector.select(timeout)
        self.waiting = False
        now = time.monotonic()
        for key, mask in ready:
            pool = key.data
            if pool is None:
                with contextlib.suppress(BlockingIOError):
                    while self.wake_r.recv(4096):
                        pass
                continue
            if pool.closed:
                continue
            action = 0
            if mask & selectors.EVENT_READ:
                action |= pycurl.CSELECT_IN
                self.readable[key.fd] = now
            if mask & selectors.EVENT_WRITE:
                action |= pycurl.CSELECT_OUT
            pool.multi.socket_action(key.fd, action)
        now = time.monotonic()
        for pool in list(self.pools):
            if pool.timer_at is not None and pool.timer_at <= now:
                pool.timer_at = None
                pool.multi.socket_action(pycurl.SOCKET_TIMEOUT, 0)
            pool.finish()
            if pool.calls:
                check = pool.next_check()
                if check is not None and check <= now:
                    pool.expire_idle(now, self.readable)

    def _timeout(self) -> float | None:
        soonest = None
        for pool in self.pools:
            for at in (pool.timer_at, pool.next_check() if pool.calls else None):
                if at is not None and (soonest is None or at < soonest):
                    soonest = at
        if soonest is None:
            return None  # nothing in flight: sleep until a command comes
        return max(0.0, soonest - time.monotonic())

    def _drain(self) -> None:
        while True:
            try:
                command = self.commands.get_nowait()
            except Empty:
                return
            kind, pool = command[0], command[1]
            if kind == "start":
                if pool.closed:
                    _reject(command[2], OutboundError("connection_error", url=command[2].safe, detail="closed"))
                    continue
                self.pools.add(pool)
                try:
                    pool.start(*command[2:])
                except Exception as exc:  # a bad option value: this call fails, nothing else does
                    call = command[2]
                    pool.calls.pop(call.handle, None)
                    _reject(call, OutboundError("request_failed", url=call.safe, detail=type(exc).__name__))
                    continue
            elif kind == "close":
                if not pool.closed:
                    pool.close()
                self.pools.discard(pool)
                command[2].set()


# This process's id, set again in a forked child: read on every call, where os.getpid() (a system
# call) was a visible part of a webhook attempt's cost on the outbound thread.
_process = [os.getpid()]
os.register_at_fork(after_in_child=lambda: _process.__setitem__(0, os.getpid()))


def _pid() -> int:
    return _process[0]


class _DriverHolder:
    """One driver per process (started again after a fork)."""

    def __init__(self) -> None:
        self.driver: _Driver | None = None
        self.pid = 0
        self.lock = threading.Lock()

    def get(self) -> _Driver:
        if self.pid != _pid():
            with self.lock:
                if self.pid != _pid():
                    self.driver, self.pid = _Driver(), _pid()
        assert self.driver is not None
        return self.driver


_driver = _DriverHolder()
