"""The MCP server (`/mcp`, apps.mcp) against its REST twin: the same question asked as an AI agent
asks it, a `list_chats` tool call, and as an integrator asks it, `GET /api/v1/chats`, both with the
page size as their argument (`limit`), with the same token over the same HTTP client (httpx2, a
kept-alive connection), measured in the same run. The tool call is a thin call of the same view, so
what it adds is the protocol: JSON-RPC in, the answer as structured content and its JSON as text,
and the era's transport.

- `mcp_tool_call`: the call as the official client (mcp.client.Client, its default mode "auto")
  makes it: `server/discover`, then each call a self-contained POST of protocol 2026-07-28 answered
  with one JSON body. Target (issue 84): `ratio<=1.3`.
- `mcp_tool_call_session` (no target): the call in a session of the handshake era (protocol
  2025-11-25, `initialize`; the client's mode "legacy", and clients built before 2026-07-28): the
  session looked up in the registry every process shares, and the answer an event stream whose
  events are stored for `Last-Event-ID` (apps.mcp.sessions).

As deployed: the web process under uvicorn (bench.lib.common.Server), PostgreSQL and Redis (the MCP
sessions' store). A widget of its own (`bench-mcp-*`, deleted at the end) with BENCH_MCP_CHATS chats
(default 20, a page of the list). Each figure is the median of per-round medians (BENCH_ROUNDS,
default 5, of BENCH_ITERATIONS calls of each step, default 100), the three steps alternating call by
call within a round (as bench.lib.common.compare alternates ours and the floor), after
a warm-up of at least BENCH_WARMUP calls of each (default 20) and BENCH_MCP_WARMUP_SECONDS (default 5).

Needs PostgreSQL (DATABASE_URL) and Redis (REDIS_URL).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import statistics
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.lib.common import Server, env_int, report_latency, skipped  # noqa: E402
from bench.lib.env import postgres_problem  # noqa: E402

NAME = "mcp_tool_call"
SESSION_NAME = "mcp_tool_call_session"
TARGET = "ratio<=1.3"
CHATS = env_int("BENCH_MCP_CHATS", 20)


def seed():
    from apps.chats.tests.factories import ChatFactory
    from apps.core.auth.scopes import ALL_SCOPES
    from apps.core.services import issue_token
    from tests.support.factories import WidgetFactory

    tag = uuid.uuid4().hex[:12]
    widget = WidgetFactory(name=f"bench-mcp-{tag}", api_enabled=True, account__user__username=f"mcp{tag}")
    for _ in range(CHATS):
        ChatFactory(contact__widget=widget)
    return widget, issue_token(widget=widget, scopes=sorted(ALL_SCOPES), name="bench").plaintext


SESSION_PROTOCOL = "2025-11-25"  # the newest version of the handshake era
PROTOCOL = "2026-07-28"  # the per-request era: what the official client speaks by default
# The page asked for, on every step: an agent's call names its arguments, and a call with arguments
# is one the SDK checks against the tool's input schema (its `Mcp-Param-*` headers).
PAGE = {"limit": CHATS}


def _answer(response) -> dict:
    """The JSON-RPC answer of a POST: a JSON body, or the `data:` of its server-sent event."""
    if response.headers.get("content-type", "").startswith("application/json"):
        return response.json()
    data = [line[5:].strip() for line in response.text.splitlines() if line.startswith("data:")]
    return json.loads(data[-1])


async def measure(server: Server, token: str) -> dict[str, float]:
    """Each measured call a POST read to its answer, as the official client sends it: the server's
    work, not a client library's (the SDK's client also checks each result against the tool's output
    schema, which is the agent's CPU). The session is opened as the client's mode "legacy" opens it."""
    import httpx2

    rounds, iterations = env_int("BENCH_ROUNDS", 5), env_int("BENCH_ITERATIONS", 100)
    warm_calls, warm_seconds = env_int("BENCH_WARMUP", 20), env_int("BENCH_MCP_WARMUP_SECONDS", 5)
    mcp = f"{server.base}/mcp"
    base = {"Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream"}
    async with httpx2.AsyncClient(headers=base, timeout=60) as http:
        meta = {
            "io.modelcontextprotocol/protocolVersion": PROTOCOL,
            "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {},
        }
        discovered = await http.post(
            mcp,
            json={"jsonrpc": "2.0", "id": 0, "method": "server/discover", "params": {"_meta": meta}},
            headers={"MCP-Protocol-Version": PROTOCOL, "Mcp-Method": "server/discover"},
        )
        if discovered.status_code != 200 or "result" not in discovered.json():
            raise RuntimeError(f"server/discover answered {discovered.status_code} {discovered.text[:300]}")
        per_request = {"MCP-Protocol-Version": PROTOCOL, "Mcp-Method": "tools/call", "Mcp-Name": "list_chats"}
        per_request_call = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "list_chats", "arguments": PAGE, "_meta": meta},
        }

        opened = await http.post(
            mcp,
            json={
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {
                    "protocolVersion": SESSION_PROTOCOL,
                    "capabilities": {},
                    "clientInfo": {"name": "bench", "version": "1"},
                },
            },
        )
        if opened.status_code != 200:
            raise RuntimeError(f"initialize answered {opened.status_code} {opened.text[:300]}")
        session = {"Mcp-Session-Id": opened.headers["mcp-session-id"], "MCP-Protocol-Version": SESSION_PROTOCOL}
        await http.post(mcp, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=session)
        session_call = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "list_chats", "arguments": PAGE},
        }

        def check(answer: dict) -> None:
            result = answer.get("result") or {}
            if result.get("isError") or len(result.get("structuredContent", {}).get("data", ())) != CHATS:
                raise RuntimeError(f"list_chats answered {str(answer)[:300]}")

        async def ours() -> None:
            check(_answer(await http.post(mcp, json=per_request_call, headers=per_request)))

        async def in_session() -> None:
            check(_answer(await http.post(mcp, json=session_call, headers=session)))

        async def floor() -> None:
            answer = await http.get(f"{server.base}/api/v1/chats", params=PAGE)
            if answer.status_code != 200 or len(answer.json()["data"]) != CHATS:
                raise RuntimeError(f"GET /api/v1/chats answered {answer.status_code} {answer.text[:300]}")

        async def one_round() -> dict[str, float]:
            """`iterations` calls of each step, the steps alternating call by call (a shared machine's
            speed changes from one second to the next; alternate calls see the same), each step
            going first in turn; each step's median, in ms."""
            samples: dict[str, list[float]] = {name: [] for name in steps}
            order = list(steps.items())
            for i in range(iterations):
                turn = i % len(order)
                for name, step in order[turn:] + order[:turn]:
                    started = time.perf_counter()
                    await step()
                    samples[name].append(time.perf_counter() - started)
            return {name: statistics.median(values) * 1000 for name, values in samples.items()}

        steps = {"ours": ours, "session": in_session, "floor": floor}
        # A web process serves its first few thousand calls slower than its steady state: the steps
        # alternate, unmeasured, until that has passed.
        warm_until = time.monotonic() + warm_seconds
        for done in itertools.count(1):
            for step in steps.values():
                await step()
            if done >= warm_calls and time.monotonic() >= warm_until:
                break
        medians: dict[str, list[float]] = {name: [] for name in steps}
        for _ in range(rounds):
            for name, median in (await one_round()).items():
                medians[name].append(median)
        await http.delete(mcp, headers=session)
    return {name: statistics.median(values) for name, values in medians.items()}


def main() -> int:
    problem = postgres_problem()
    if problem:
        skipped(NAME, problem)
        return 0
    if not os.environ.get("REDIS_URL"):
        skipped(NAME, "REDIS_URL is not set: the MCP sessions are kept in Redis as deployed")
        return 0
    from django.core.management import call_command

    call_command("migrate", verbosity=0, interactive=False)
    widget, token = seed()
    try:
        with Server(NAME) as server:
            figures = asyncio.run(measure(server, token))
            report_latency(NAME, figures["ours"], figures["floor"], target=TARGET)
            report_latency(SESSION_NAME, figures["session"], figures["floor"], target=None)
    finally:
        from apps.core.models import Widget

        Widget.objects.filter(pk=widget.pk).delete()
    return 0


if __name__ == "__main__":
    from bench.lib.env import setup_django

    setup_django()
    sys.exit(main())
