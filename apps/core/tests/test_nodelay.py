"""apps.core.nodelay: accepted connections get TCP_NODELAY even when the listening socket was bound
with `proto` 0 (uvicorn's supervisor, `--workers N`), as asyncio gives them with `proto` 6."""

from __future__ import annotations

import asyncio
import socket
from asyncio import base_events

import pytest

from apps.core import nodelay


def _accepted(proto: int) -> tuple[socket.socket, socket.socket, socket.socket]:
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM, proto)
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    client = socket.create_connection(listener.getsockname())
    accepted, _ = listener.accept()
    return listener, client, accepted


@pytest.mark.parametrize("proto", [0, socket.IPPROTO_TCP])
def test_an_accepted_tcp_connection_gets_nodelay_whatever_the_listeners_proto(proto):
    listener, client, accepted = _accepted(proto)
    try:
        assert accepted.proto == proto
        assert accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 0
        nodelay.set_nodelay(accepted)
        assert accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
    finally:
        for sock in (accepted, client, listener):
            sock.close()


def test_the_web_application_installs_it_for_the_event_loop():
    import config.asgi  # noqa: F401 - what every web process imports before it serves

    assert base_events._set_nodelay is nodelay.set_nodelay


def test_a_server_on_a_proto_0_socket_gives_its_connections_nodelay():
    # given a listening socket bound as uvicorn's supervisor binds it (proto 0), served by asyncio
    nodelay.install()
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    seen: list[int] = []

    async def serve() -> None:
        def on_connection(reader, writer):
            sock = writer.get_extra_info("socket")
            seen.append(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            writer.close()

        server = await asyncio.start_server(on_connection, sock=listener)
        async with server:
            _reader, writer = await asyncio.open_connection(*listener.getsockname())
            for _ in range(100):
                if seen:
                    break
                await asyncio.sleep(0.01)
            writer.close()

    # when a client connects
    asyncio.run(serve())

    # then the accepted connection has Nagle's algorithm off
    assert seen and seen[0] != 0
