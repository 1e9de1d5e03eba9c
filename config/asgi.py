"""ASGI entry point: HTTP through the body gate and Django, websockets through Channels."""

import os

from apps.core import nodelay
from apps.core.asgi_handler import freeze_startup_objects, get_asgi_application

nodelay.install()  # before the server accepts: see apps.core.nodelay (uvicorn --workers and Nagle)
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django_asgi_app = get_asgi_application()  # one hop to a thread per request: apps.core.asgi_handler

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402

from apps.core.asgi_limits import RequestBodyLimit  # noqa: E402
from config.routing import websocket_urlpatterns  # noqa: E402

application = ProtocolTypeRouter(
    {
        # Over-limit bodies are refused while they are read, before Django spools them; chunked
        # bodies reach Django with the length they had.
        "http": RequestBodyLimit(django_asgi_app),
        # Visitor sockets come from the customers' sites (any origin; the session token is the
        # credential); operator sockets validate their origin in their own route.
        "websocket": URLRouter(websocket_urlpatterns),
    }
)

freeze_startup_objects()  # last: the collector never walks startup's objects again (apps.core.asgi_handler)
