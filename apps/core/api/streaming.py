"""Downloads: a streaming response over a synchronous iterator that streams under ASGI too, and the
content negotiation of a route whose body has one fixed type (the chat transcript, the chats export,
a contact's export)."""

from __future__ import annotations

from asgiref.sync import sync_to_async
from django.http import StreamingHttpResponse
from rest_framework.negotiation import BaseContentNegotiation

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


class IgnoreAccept(BaseContentNegotiation):
    """The body's type is the route's whatever the client accepts; errors stay problem+json. DRF's
    default negotiation would answer 406 to `Accept: text/plain` because only JSON renders there."""

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type

    def select_parser(self, request, parsers):
        return parsers[0] if parsers else None
