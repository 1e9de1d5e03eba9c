"""Django's HTTP handler for ASGI, with each request's synchronous work in one hop to its thread.

Django's own ASGIHandler builds an async middleware chain. With synchronous middleware and views
(ours) it then crosses between the event loop and the request's worker thread many times a request:
into the chain, back to the loop below every synchronous-only middleware, again for each
`MiddlewareMixin.process_request`/`process_response` in async mode, for each synchronous
`process_view`, for the view and for rendering. Every crossing waits its turn on the loop, which
under load is busy with every other request's crossings.

This handler keeps Django's ASGI request and response handling (body reading, signals, streaming,
closing) and runs the synchronous request path as WSGI does, in one hop: the synchronous middleware
chain, URL resolution, `process_view`, the view and rendering. An async view still runs on the event
loop (Django's synchronous path awaits it there through `async_to_sync`).
"""

from __future__ import annotations

from asgiref.sync import sync_to_async
from django.core.handlers.asgi import ASGIHandler


class OneHopASGIHandler(ASGIHandler):
    def __init__(self):
        super().__init__()
        self.load_middleware(is_async=False)

    async def get_response_async(self, request):
        return await sync_to_async(self.get_response, thread_sensitive=True)(request)


def get_asgi_application() -> OneHopASGIHandler:
    """django.core.asgi.get_asgi_application with this handler."""
    import django

    django.setup(set_prefix=False)
    return OneHopASGIHandler()
