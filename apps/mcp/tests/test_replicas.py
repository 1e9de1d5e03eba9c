"""One MCP session across two replicas of the web server: the Procfile's web command started twice on
the same PostgreSQL and Redis (two process trees, as two containers behind a load balancer are), and
the official client whose requests alternate between them."""

from __future__ import annotations

import json

import anyio
import httpx2
import pytest
import requests
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from apps.mcp import registry
from tests.live import start_web

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.django_db(transaction=True)]


class Alternating(httpx2.AsyncBaseTransport):
    """Sends each request to the next server in turn (a round-robin load balancer), and notes
    where each went and how it was answered."""

    def __init__(self, ports: list[int]):
        self.ports, self.turn = ports, 0
        self.inner = httpx2.AsyncHTTPTransport()
        self.seen: list[tuple[int, str, int]] = []
        self.sessions: set[str] = set()

    async def handle_async_request(self, request):
        port = self.ports[self.turn % len(self.ports)]
        self.turn += 1
        request.url = request.url.copy_with(port=port)
        response = await self.inner.handle_async_request(request)
        self.seen.append((port, request.method, response.status_code))
        if "mcp-session-id" in response.headers:
            self.sessions.add(response.headers["mcp-session-id"])
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()


def test_a_session_is_served_by_whichever_replica_a_request_reaches(tmp_path):
    from django.conf import settings
    from django.core.management import call_command

    from tests.support.concurrency import database_url

    out = tmp_path / "seed.json"
    with out.open("w") as stream:
        call_command("seed_demo", stdout=stream)
    seed = json.loads(out.read_text().strip().splitlines()[-1])
    env = {"DATABASE_URL": database_url(), "REDIS_URL": settings.REDIS_URL, "WEB_CONCURRENCY": "1"}
    servers = []
    try:
        for name in ("a", "b"):
            var = tmp_path / f"var-{name}"
            var.mkdir()
            servers.append(start_web(var, seed, tmp_path / f"web-{name}.log", **env))
        ports = [server.port for server in servers]
        transport = Alternating(ports)
        headers = {"Authorization": f"Bearer {seed['token']}"}

        async def go():
            async with httpx2.AsyncClient(transport=transport, headers=headers, timeout=60) as http:
                url = servers[0].url("/mcp")
                async with Client(streamable_http_client(url, http_client=http), mode="legacy") as client:
                    listed = {tool.name for tool in (await client.list_tools()).tools}
                    calls = [await client.call_tool("list_chats", {}) for _ in range(4)]
                return listed, calls

        listed, calls = anyio.run(go)
        assert listed == set(registry.tools())
        rest = requests.get(servers[1].url("/api/v1/chats"), headers=headers, timeout=30).json()
        for result in calls:
            assert not result.is_error, result
            assert result.structured_content["data"] == rest["data"]
        posts = [(port, status) for port, method, status in transport.seen if method == "POST"]
        assert {port for port, _ in posts} == set(ports)  # both replicas answered the session's requests
        assert all(status in (200, 202) for _, status in posts), transport.seen
        # the client ended its session (DELETE) on one replica: neither serves it any more
        assert [status for _, method, status in transport.seen if method == "DELETE"] == [200]
        (session,) = transport.sessions
        for server in servers:
            after = requests.post(
                f"{server.base}/mcp",
                json={"jsonrpc": "2.0", "id": 9, "method": "tools/list"},
                headers={
                    **headers,
                    "Accept": "application/json, text/event-stream",
                    "Mcp-Session-Id": session,
                    "MCP-Protocol-Version": "2025-11-25",
                },
                timeout=30,
            )
            assert after.status_code == 404, after.text
    finally:
        for server in servers:
            server.terminate()
