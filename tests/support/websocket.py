"""A websocket test client for ASGI apps (channels.testing needs daphne, which we do not install)."""

import asyncio
import json
import threading
from unittest import mock
from urllib.parse import unquote, urlsplit

from asgiref.testing import ApplicationCommunicator
from django.db import connections

__all__ = ["WebsocketCommunicator"]


def _close_off_the_test_thread() -> None:
    """The test's own thread keeps its connection (the test's transaction lives on it); a consumer's
    call on a pool thread (thread_sensitive=False) closes its own, as in production, so no
    connection outlives the test and the test database can be dropped."""
    if threading.current_thread() is not threading.main_thread():
        connections.close_all()


class WebsocketCommunicator(ApplicationCommunicator):
    """The few methods of channels.testing.WebsocketCommunicator these tests use (importing
    channels.testing needs daphne, which the project does not install). Like channels' own
    communicator, it keeps consumers from closing the test's database connection."""

    def __init__(self, app, url: str, headers=None):
        # `gone = True` is the client gone without its close read yet: every later send raises an
        # OSError, as ASGI servers do (uvicorn's ClientDisconnected), while websocket.disconnect waits
        # in the queue behind whatever the consumer is doing.
        self.gone = False
        self.refused_sends = 0

        async def served(scope, receive, send):
            async def server_send(message):
                if self.gone:
                    self.refused_sends += 1
                    raise ConnectionResetError("the client went away")
                await send(message)

            await app(scope, receive, server_send)

        parsed = urlsplit(url)
        scope = {
            "type": "websocket",
            "path": unquote(parsed.path),
            "query_string": parsed.query.encode(),
            "headers": headers or [],
            "subprotocols": [],
        }
        super().__init__(served, scope)

    async def refused_a_send(self, timeout=1) -> None:
        """Wait until the consumer has tried to send to the gone client (`gone = True`)."""
        async with asyncio.timeout(timeout):
            while not self.refused_sends:
                await asyncio.sleep(0.01)

    async def send_input(self, message):
        with mock.patch("channels.db.close_old_connections", _close_off_the_test_thread):
            return await super().send_input(message)

    async def receive_output(self, timeout=1):
        with mock.patch("channels.db.close_old_connections", _close_off_the_test_thread):
            return await super().receive_output(timeout)

    async def connect(self, timeout=1):
        await self.send_input({"type": "websocket.connect"})
        response = await self.receive_output(timeout)
        if response["type"] == "websocket.close":
            return False, response.get("code", 1000)
        return True, response.get("subprotocol")

    async def send_to(self, text_data=None, bytes_data=None):
        if text_data is not None:
            await self.send_input({"type": "websocket.receive", "text": text_data})
        else:
            await self.send_input({"type": "websocket.receive", "bytes": bytes_data})

    async def send_json_to(self, data):
        await self.send_to(text_data=json.dumps(data))

    async def receive_json_from(self, timeout=1):
        response = await self.receive_output(timeout)
        assert response["type"] == "websocket.send", response
        return json.loads(response["text"])

    async def disconnect(self, code=1000, timeout=1):
        await self.send_input({"type": "websocket.disconnect", "code": code})
        await self.wait(timeout)
