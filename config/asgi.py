"""The web process's one application (uvicorn serves it; scripts/web.sh, the Procfile's `web`).

- HTTP to a synchronous view: Django's WSGI handler (config.wsgi) through a2wsgi, whose thread pool of
  WEB_THREADS threads runs each request's whole synchronous path in one thread, as a WSGI server does;
- HTTP to an async view (the detached assistant test, which awaits an LLM provider): Django's own
  ASGI handler, so the view waits on the event loop and holds no thread;
- HTTP to /mcp: the MCP server (apps.mcp.asgi: Streamable HTTP, the REST API's bearer tokens), before
  the body gate and Django, since its streams are the SDK's to read and write (it limits bodies itself);
- websockets: Channels;
- the lifespan protocol: what only the server's own process does, once, at its start
  (`ServerStart`; scripts/web.sh turns the protocol on): its collector's thresholds, the first-run
  page's address in the log while no account exists (apps.console.setup), and the MCP server's
  session manager, which runs until the server stops.

Every HTTP request passes the body gate first (apps.core.asgi_limits): 413 while the body is read, the
body read on the event loop before a thread is taken, and a streamed response stopped once its client
has gone. A synchronous view's answer is taken from its thread as fast as it is produced and written at
the client's pace on the event loop (ResponseBuffer), so a client that does not read holds no thread.
"""

import asyncio
import contextlib
import gc
import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

from a2wsgi import WSGIMiddleware  # noqa: E402
from asgiref.sync import iscoroutinefunction  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from django.conf import settings  # noqa: E402
from django.core.asgi import get_asgi_application  # noqa: E402
from django.urls import Resolver404, get_resolver, resolve  # noqa: E402

from config.wsgi import application as wsgi_application  # noqa: E402

django_asgi_app = get_asgi_application()

from apps.console import setup  # noqa: E402
from apps.core.asgi_limits import RequestBodyLimit, ResponseBuffer, StopWhenGone  # noqa: E402
from apps.mcp.asgi import McpApp, is_mcp  # noqa: E402
from apps.platform import realtime  # noqa: E402
from config.routing import websocket_urlpatterns  # noqa: E402


class ByView:
    """HTTP to the handler the view needs: an async view to Django's ASGI handler, any other path
    (unknown ones too) to the WSGI application."""

    def __init__(self, *, sync_app, async_app):
        self.sync_app, self.async_app = sync_app, async_app

    async def __call__(self, scope, receive, send):
        realtime.serve_on(asyncio.get_running_loop())
        try:
            view = resolve(scope["path"]).func
        except Resolver404:
            view = None
        app = self.async_app if view is not None and iscoroutinefunction(view) else self.sync_app
        return await app(scope, receive, send)


class ByPath:
    """HTTP to /mcp to the MCP server, any other path to the rest of the service."""

    def __init__(self, *, mcp, rest):
        self.mcp, self.rest = mcp, rest

    async def __call__(self, scope, receive, send):
        app = self.mcp if is_mcp(scope) else self.rest
        return await app(scope, receive, send)


# The garbage collector's thresholds in the server (the defaults are 700, 10, 10). What is not frozen
# (below) is mostly what open sockets hold, some 150 tracked objects each, and a collection of the
# oldest generation walks all of them while no request or push runs. The third threshold makes
# those full collections rare (considered after 100 middle ones; CPython also waits until the
# objects promoted since the last one are a quarter of the old generation). The first two keep the
# other collections short: a young one every 10,000 net allocations, and a middle one every 5
# young ones, so the middle generation, which each middle collection walks, stays small and a
# socket's objects move on to the old generation soon after it opens.
SERVER_GC_THRESHOLDS = (10_000, 5, 100)


class ServerStart:
    """The ASGI lifespan protocol: settings of the serving process alone. A process that only imports
    the application (a test, a management command) keeps the interpreter's defaults, so the objects
    its short-lived threads leave in cycles (their database connections among them) are freed
    soon."""

    def __init__(self, *, mcp: McpApp):
        self.mcp = mcp

    async def __call__(self, scope, receive, send):
        async with contextlib.AsyncExitStack() as running:
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    gc.set_threshold(*SERVER_GC_THRESHOLDS)
                    # A database read: in a thread, off the event loop (every web process prints the same code).
                    await asyncio.to_thread(setup.announce_at_start)
                    await running.enter_async_context(self.mcp.run())
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await running.aclose()  # the streams of the MCP sessions this process holds close
                    await send({"type": "lifespan.shutdown.complete"})
                    return


mcp_application = McpApp()

application = ProtocolTypeRouter(
    {
        # Over-limit bodies are refused while they are read, before Django spools them; chunked
        # bodies reach Django with the length they had.
        "http": ByPath(
            mcp=mcp_application,
            rest=RequestBodyLimit(
                ByView(
                    sync_app=ResponseBuffer(
                        WSGIMiddleware(StopWhenGone(wsgi_application), workers=settings.WEB_THREADS)
                    ),
                    async_app=django_asgi_app,
                )
            ),
        ),
        # Visitor sockets come from the customers' sites (any origin; the session token is the
        # credential); operator sockets validate their origin in their own route.
        "websocket": URLRouter(websocket_urlpatterns),
        "lifespan": ServerStart(mcp=mcp_application),
    }
)

# Last: the URL conf is loaded (every view module imported), what start-up left as garbage is freed,
# and the rest (Django, the apps, DRF, some 400 000 long-lived objects) is moved out of the garbage
# collector's reach, so a full collection under load walks only what requests made since.
get_resolver().url_patterns  # noqa: B018
gc.collect()
gc.freeze()
