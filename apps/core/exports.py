"""Exports of a widget in flight (the chats export, a contact's export): at most a few of one widget
at once, across web processes, each counted from its admission until its client has the whole body
or has gone.

A request thread produces an export's body and the event loop writes it to the client at the
client's pace (apps.core.asgi_limits.ResponseBuffer), what the client has not read yet waiting in
memory or a temporary file. The cap bounds the threads and database work of one widget's exports
being produced and what its unread ones keep waiting; another export of the widget is 429
`rate_limited` with `Retry-After`.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator

from .asgi_limits import when_written
from .errors import RateLimited, ServiceUnavailable
from .ratelimit import Slot, Slots, SlotStoreUnavailable


def admit(slots: Slots, widget_id: int, *, retry_after: int) -> Slot:
    """One of the widget's export slots: 429 rate_limited while `slots.count` of its exports are in
    flight, 503 service_unavailable when the slot store does not answer (nothing is started)."""
    try:
        slot = slots.acquire(widget_id)
    except SlotStoreUnavailable:
        raise ServiceUnavailable("The export admission store is unavailable; retry later.") from None
    if slot is None:
        raise RateLimited(
            f"At most {slots.count} exports of this widget run at once; retry when one has finished.",
            headers={"Retry-After": str(retry_after)},
        )
    return slot


class Holding:
    """The body `chunks` of an export of `request` holding `slot` of `slots`: the slot is freed once
    the client has the whole body or has gone (or, outside the web server, when the response is
    closed), also when the body was never iterated, which a generator's own `finally` would miss."""

    def __init__(self, chunks: Iterator[bytes], *, slots: Slots, slot: Slot, request):
        self._chunks, self._slots, self._slot, self._request = chunks, slots, slot, request

    def __iter__(self) -> Iterator[bytes]:
        return self

    def __next__(self) -> bytes:
        return next(self._chunks)

    def close(self) -> None:
        slot, self._slot = self._slot, None
        try:
            close = getattr(self._chunks, "close", None)
            if close is not None:
                close()
        finally:
            if slot is not None:
                when_written(self._request, functools.partial(self._slots.release, slot))
