"""TCP_NODELAY on every accepted connection of the web process, whatever bound its socket.

asyncio turns Nagle's algorithm off on an accepted TCP connection only when the socket reports
`proto == IPPROTO_TCP`. uvicorn's supervisor (`--workers N`, what scripts/web.sh runs above one
process) binds the listening socket itself with `proto` left at 0, and accepted sockets inherit it,
so with two or more web processes every response on a kept-alive connection waited for the client's
delayed ACK, tens of milliseconds a request on Linux (uvicorn issue #3149, open in the pinned
0.54.0). `install()` (called by config.asgi, which
every web process imports before it serves) makes asyncio's check accept `proto` 0 for TCP sockets
of the IPv4 and IPv6 families too; a socket that already has the option is unchanged.
"""

from __future__ import annotations

import socket
from asyncio import base_events

_TCP_FAMILIES = {socket.AF_INET, socket.AF_INET6}


def set_nodelay(sock: socket.socket) -> None:
    if sock.family in _TCP_FAMILIES and sock.type == socket.SOCK_STREAM and sock.proto in (0, socket.IPPROTO_TCP):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def install() -> None:
    if hasattr(socket, "TCP_NODELAY"):
        base_events._set_nodelay = set_nodelay
