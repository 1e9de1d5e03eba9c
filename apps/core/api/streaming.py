"""A streaming response over a synchronous iterator that streams under ASGI too (the chat
transcript, a contact's export)."""

from __future__ import annotations

from asgiref.sync import sync_to_async
from django.http import StreamingHttpResponse

_DONE = object()


class SyncStreamingResponse(StreamingHttpResponse):
    """A streaming response over a synchronous iterator that streams under ASGI too.

    Django's ASGI handler consumes a synchronous iterator with `sync_to_async(list)`: the whole
    body is built in memory before the first byte leaves. Here each piece is pulled with its own
    thread-sensitive `sync_to_async(next)`, so the database work stays on the request's sync thread
    (its connection, closed by request_finished there) and memory stays at one piece. Under WSGI
    the iterator is consumed as it is.
    """

    async def __aiter__(self):
        if self.is_async:
            async for part in super().__aiter__():
                yield part
            return
        pieces = iter(self.streaming_content)
        pull = sync_to_async(next, thread_sensitive=True)
        while (part := await pull(pieces, _DONE)) is not _DONE:
            yield part
