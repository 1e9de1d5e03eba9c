"""Visitor sockets on one web process with Redis: how fast they open, what an idle one costs, and how
fast a REST write reaches them. Target (issue 50): N = 10,000 sockets open within 60 s at 200 opens a
second or more, at most 64 kB of the server's RSS each, idle CPU at most 10% of a core, and 1,000
operator replies pushed at concurrency 10 with p99 at most 500 ms and none dropped.

Ours: the Procfile's web process (bench.lib.common.Server, one process, the driver's DATABASE_URL and
REDIS_URL) serving /ws/visitor/{guid}/?session=<token> for a widget of the benchmark's own, with N/10
visitor sessions (10 sockets each, the per-session cap) whose contacts each have a room. The driver
opens the N sockets, BENCH_SOCKETS_OPENING at a time, and counts those still open after they settle;
then the server idles BENCH_SOCKETS_IDLE_SECONDS (default 25, past one slot-refresh period) while its
CPU time and RSS are read from /proc; then BENCH_SOCKETS_REPLIES replies (default 1,000) are posted
to the rooms with POST /api/v1/chats/{id}/messages by BENCH_SOCKETS_CONCURRENCY clients (default 10),
each waiting for its reply on the room's socket before the next: a reply's latency is from its POST
to the frame on the socket, and a reply that does not reach every socket of its session within 10 s
is a drop. INFO lines give the server's CPU time per open over the opening phase (`open_cpu`) and
split the same replies at the POST's answer: the REST write itself (`push.post_p50`) and the push
after it (`push.after_post_p50`, `push.after_post_p99`; 0 when the frame came before the answer, as
the push is sent on commit).

Floor: a bare websocket server on the same uvicorn and event loop (bench.lib.ws_floor: accept, echo,
and `POST /push/<n>` writing to socket n), measured by the same driver the same way.

BENCH_SOCKETS (default 10,000) is scaled by BENCH_SCALE when that is below 1. The driver and the
server each hold one descriptor per socket: `ulimit -n` must exceed N in both (the driver says so
before it starts). Needs PostgreSQL and Redis (REDIS_URL): the embedded default's single process is
not what this measures.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import resource
import statistics
import sys
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.insert(0, str(_HERE.parent))

from bench.lib.common import Server, bench_line, env_int, expect, session, skipped  # noqa: E402
from bench.lib.env import migrations_pending, postgres_problem, setup_django  # noqa: E402
from bench.lib.restore import drop_queued_work_of_deleted_rows  # noqa: E402

NAME = "sockets"
PER_SESSION = 10
OPEN_TARGET_SECONDS, OPENS_TARGET, RSS_TARGET_KB, IDLE_CPU_TARGET, P99_TARGET = 60, 200, 64, 10, 500
FLOOR_COMMAND = (
    "uvicorn bench.lib.ws_floor:app --host 127.0.0.1 --port {port} --no-access-log --lifespan off"
    " --ws-per-message-deflate false"  # as scripts/web.sh starts ours
)
DROP_SECONDS = 10.0


def socket_count() -> int:
    count = env_int("BENCH_SOCKETS", 10_000)
    scale = float(os.environ.get("BENCH_SCALE", "1") or 1)
    return max(PER_SESSION, int(count * min(scale, 1.0)))


def main() -> int:
    problem = postgres_problem()
    if problem or not os.environ.get("REDIS_URL"):
        skipped(NAME, problem or "REDIS_URL is not set: one web process with Redis is what this measures")
        return 0
    setup_django()
    if migrations_pending():
        print(f"BENCH {NAME} FAILED (unapplied migrations)", flush=True)
        return 1
    n = socket_count()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < n + 200:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, n + 1000), hard))
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < n + 200:
        print(f"BENCH {NAME} FAILED (ulimit -n is {soft}: {n} sockets need more; lower BENCH_SOCKETS)", flush=True)
        return 1
    replies = env_int("BENCH_SOCKETS_REPLIES", 1000)
    print(f"{NAME}: {n} sockets, {replies} replies, fd limit {soft}", flush=True)

    from apps.core.models import Account

    widget, token, rooms = make_widget(n)
    try:
        env = {"VISITOR_SOCKETS_PER_ADDRESS": "0"}  # every socket comes from one address, on purpose
        with Server(NAME, env=env) as server:
            ours = asyncio.run(run_ours(server, widget.button_guid, token, rooms, n, replies))
        os.environ["BENCH_WEB_COMMAND"] = FLOOR_COMMAND
        try:
            with Server(f"{NAME}_floor") as server:
                floor = asyncio.run(run_floor(server, n, replies))
        finally:
            os.environ.pop("BENCH_WEB_COMMAND")
    finally:
        Account.objects.filter(pk=widget.account_id).delete()
        drop_queued_work_of_deleted_rows(NAME)
    report(ours, floor, n)
    # A missed target is not a failed run: bench.lib.targets gives the verdict from the BENCH lines.
    return 0


def make_widget(n: int):
    """A widget of the benchmark's own: ceil(n / 10) visitor sessions whose contacts each have a room,
    and a token to reply with. Returns (widget, token, [(session token, chat id)])."""
    from apps.agents.models import Agent
    from apps.billing.models import AccountPlan, Plan
    from apps.chats.services import MessageInput
    from apps.chats.visitor import services as visitor
    from apps.core.auth.scopes import ALL_SCOPES
    from apps.core.services import create_widget, issue_token

    suffix = uuid.uuid4().hex[:10]
    widget = create_widget(owner_email=f"sockets-bench-{suffix}@example.com", name=f"sockets bench {suffix}")
    widget.api_enabled = True
    widget.save(update_fields=["api_enabled"])
    plan = Plan.objects.filter(is_paid=True).first()
    if plan is not None:
        AccountPlan.objects.update_or_create(account=widget.account, defaults={"plan": plan})
    token = issue_token(widget=widget, scopes=sorted(ALL_SCOPES), name="bench").plaintext
    agent = Agent.objects.filter(widget=widget, type=Agent.Type.HUMAN).first() or Agent.objects.create(
        widget=widget, name="operator"
    )
    rooms = []
    os.environ["BENCH_SOCKETS_AGENT"] = str(agent.pk)
    started = time.monotonic()
    for k in range(math.ceil(n / PER_SESSION)):
        visitor_session, plaintext = visitor.start_session(widget=widget, name=f"visitor {k}")
        message = visitor.send_message(widget=widget, contact=visitor_session.contact, data=MessageInput(body="hello"))
        rooms.append((plaintext, message.chat_id))
    print(f"{NAME}: {len(rooms)} sessions with rooms in {time.monotonic() - started:.1f} s", flush=True)
    return widget, token, rooms


# --- the driver ------------------------------------------------------------------------------------


class Sockets:
    """N client sockets and what arrives on them: frames carrying a `bench` marker are noted with the
    time they arrived."""

    def __init__(self):
        self.open: list = []
        self.failed = 0
        self.arrived: dict[str, dict[int, float]] = {}
        self.waiters: dict[str, asyncio.Future] = {}
        self.expect: dict[str, int] = {}
        self.readers: list[asyncio.Task] = []

    async def open_all(self, urls: list[tuple[int, str]]) -> float:
        """Opens every (group, url), BENCH_SOCKETS_OPENING at a time; returns the seconds taken."""
        import websockets

        gate = asyncio.Semaphore(env_int("BENCH_SOCKETS_OPENING", 50))

        async def one(group: int, url: str) -> None:
            async with gate:
                try:
                    ws = await websockets.connect(url, open_timeout=60, ping_interval=None, max_queue=64)
                except Exception:
                    self.failed += 1
                    return
                self.open.append(ws)
                self.readers.append(asyncio.create_task(self._read(ws, group)))

        started = time.perf_counter()
        await asyncio.gather(*(one(group, url) for group, url in urls))
        return time.perf_counter() - started

    async def _read(self, ws, group: int) -> None:
        try:
            async for raw in ws:
                now = time.perf_counter()
                marker = _marker(raw)
                if marker is None:
                    continue
                seen = self.arrived.setdefault(marker, {})
                seen.setdefault(id(ws), now)
                waiter = self.waiters.get(marker)
                if waiter is not None and not waiter.done() and len(seen) >= self.expect.get(marker, 1):
                    waiter.set_result(now)
        except Exception:
            return

    def still_open(self) -> int:
        from websockets.protocol import State

        return sum(1 for ws in self.open if ws.state is State.OPEN)

    async def close(self) -> None:
        for task in self.readers:
            task.cancel()
        await asyncio.gather(*(ws.close() for ws in self.open), return_exceptions=True)


def _marker(raw) -> str | None:
    if not isinstance(raw, str) or "bench-" not in raw:
        return None
    try:
        frame = json.loads(raw)
    except ValueError:
        return None
    if isinstance(frame.get("message"), dict):
        body = frame["message"].get("body")
    else:
        body = frame.get("body")
    return body if isinstance(body, str) and body.startswith("bench-") else None


def proc_cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def measure(server: Server, sockets: Sockets, urls, post_reply, targets: list[tuple[int, int]], replies: int):
    """Opens, idle cost and push latency; `post_reply(target, body)` posts one reply (blocking) and
    `targets` are (target, sockets that should get it)."""
    import websockets

    # one socket first, so what the first socket loads (imports, connections) is not counted per socket
    group0, url0 = urls[0]
    warm = await websockets.connect(url0, open_timeout=60, ping_interval=None)
    await asyncio.sleep(0.5)
    await warm.close()
    await asyncio.sleep(1)
    rss_before = server.rss_kib()
    open_cpu_before = proc_cpu_seconds(server.proc.pid)
    seconds = await sockets.open_all(urls)
    open_cpu = proc_cpu_seconds(server.proc.pid) - open_cpu_before
    await asyncio.sleep(2)  # refusals close right after the accept
    opened = sockets.still_open()
    idle = env_int("BENCH_SOCKETS_IDLE_SECONDS", 25)
    cpu_before, wall_before = proc_cpu_seconds(server.proc.pid), time.monotonic()
    await asyncio.sleep(idle)
    cpu = (proc_cpu_seconds(server.proc.pid) - cpu_before) / (time.monotonic() - wall_before) * 100
    rss_per = (server.rss_kib() - rss_before) * 1024 / max(opened, 1) / 1000
    fds = len(os.listdir(f"/proc/{server.proc.pid}/fd"))

    concurrency = env_int("BENCH_SOCKETS_CONCURRENCY", 10)
    pool = ThreadPoolExecutor(concurrency)
    loop = asyncio.get_running_loop()
    latencies: list[float] = []
    # the same replies split at the POST's answer: the REST write itself, then the push after it
    posts: list[float] = []
    after_posts: list[float] = []
    drops = 0
    queue = list(range(replies))

    async def client() -> None:
        nonlocal drops
        while queue:
            k = queue.pop()
            target, expected = targets[k % len(targets)]
            body = f"bench-{k}-{uuid.uuid4().hex[:6]}"
            sockets.expect[body] = expected
            waiter = sockets.waiters[body] = loop.create_future()
            started = time.perf_counter()
            await loop.run_in_executor(pool, post_reply, target, body)
            answered = time.perf_counter()
            try:
                arrived = await asyncio.wait_for(waiter, DROP_SECONDS)
                latencies.append((arrived - started) * 1000)
                posts.append((answered - started) * 1000)
                after_posts.append(max(0.0, arrived - answered) * 1000)
            except TimeoutError:
                drops += 1
            sockets.waiters.pop(body, None)

    push_started = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(concurrency)))
    push_seconds = time.perf_counter() - push_started
    pool.shutdown()
    await sockets.close()
    latencies.sort()
    return {
        "post_p50": statistics.median(posts) if posts else float("nan"),
        "after_post_p50": statistics.median(after_posts) if after_posts else float("nan"),
        "after_post_p99": _p99(sorted(after_posts)),
        "opened": opened,
        "failed": sockets.failed + (len(urls) - sockets.failed - opened),
        "open_seconds": seconds,
        "opens_per_s": opened / seconds,
        "open_cpu_ms": open_cpu * 1000 / max(opened, 1),
        "rss_kb": rss_per,
        "idle_cpu": cpu,
        "fds": fds,
        "p50": statistics.median(latencies) if latencies else float("nan"),
        "p99": _p99(latencies),
        "drops": drops,
        "push_seconds": push_seconds,
    }


def _p99(ordered: list[float]) -> float:
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] if ordered else float("nan")


async def run_ours(server: Server, guid: str, token: str, rooms, n: int, replies: int) -> dict:
    ws_base = server.base.replace("http://", "ws://")
    urls = [(k // PER_SESSION, f"{ws_base}/ws/visitor/{guid}/?session={rooms[k // PER_SESSION][0]}") for k in range(n)]
    per_room = [min(PER_SESSION, n - r * PER_SESSION) for r in range(len(rooms))]
    http = session(token)
    http.mount("http://", __import__("requests").adapters.HTTPAdapter(pool_maxsize=32))

    agent_id = int(os.environ["BENCH_SOCKETS_AGENT"])

    def post_reply(chat_id: int, body: str) -> None:
        expect(
            http.post(
                f"{server.base}/api/v1/chats/{chat_id}/messages",
                json={"type": "text", "body": body, "agent_id": agent_id},
                headers={"X-Service-Idempotency-Key": uuid.uuid4().hex},
            ),
            202,
        )

    sockets = Sockets()
    result = await measure(
        server, sockets, urls, post_reply, [(chat, per_room[r]) for r, (_, chat) in enumerate(rooms)], replies
    )
    print(f"{NAME}: ours {json.dumps({k: round(v, 2) for k, v in result.items()})}", flush=True)
    return result


async def run_floor(server: Server, n: int, replies: int) -> dict:
    ws_base = server.base.replace("http://", "ws://")
    urls = [(k, f"{ws_base}/ws/{k}") for k in range(n)]
    http = session()
    http.mount("http://", __import__("requests").adapters.HTTPAdapter(pool_maxsize=32))

    def post_reply(k: int, body: str) -> None:
        expect(http.post(f"{server.base}/push/{k}", data=json.dumps({"body": body})), 202)

    sockets = Sockets()
    result = await measure(server, sockets, urls, post_reply, [(k, 1) for k in range(0, n, PER_SESSION)], replies)
    print(f"{NAME}: floor {json.dumps({k: round(v, 2) for k, v in result.items()})}", flush=True)
    return result


def report(ours: dict, floor: dict, n: int) -> None:
    def ratio(a, b):
        return round(a / b, 2) if b else None

    bench_line(
        f"{NAME}.opens",
        ours=round(ours["opens_per_s"], 1),
        floor=round(floor["opens_per_s"], 1),
        ratio=ratio(floor["opens_per_s"], ours["opens_per_s"]),
        target=f"ours>={OPENS_TARGET}",
        unit="opens/s",
    )
    bench_line(
        f"{NAME}.open_all",
        ours=round(ours["open_seconds"], 1),
        floor=round(floor["open_seconds"], 1),
        ratio=ratio(ours["open_seconds"], floor["open_seconds"]),
        target=f"ours<={OPEN_TARGET_SECONDS * n / 10_000:g}",
        unit="s",
    )
    bench_line(
        f"{NAME}.open_cpu",
        ours=round(ours["open_cpu_ms"], 2),
        floor=round(floor["open_cpu_ms"], 2),
        ratio=ratio(ours["open_cpu_ms"], floor["open_cpu_ms"]),
        target=None,
        unit="ms/open",
    )
    bench_line(
        f"{NAME}.failed",
        ours=ours["failed"],
        floor=floor["failed"],
        ratio=None,
        target="ours==0",
        unit="sockets",
    )
    bench_line(
        f"{NAME}.rss",
        ours=round(ours["rss_kb"], 1),
        floor=round(floor["rss_kb"], 1),
        ratio=ratio(ours["rss_kb"], floor["rss_kb"]),
        target=f"ours<={RSS_TARGET_KB}",
        unit="kB/socket",
    )
    bench_line(
        f"{NAME}.idle_cpu",
        ours=round(ours["idle_cpu"], 1),
        floor=round(floor["idle_cpu"], 1),
        ratio=None,
        target=f"ours<={IDLE_CPU_TARGET}",
        unit="%core",
    )
    bench_line(
        f"{NAME}.fds",
        ours=round(ours["fds"] / max(ours["opened"], 1), 3),
        floor=round(floor["fds"] / max(floor["opened"], 1), 3),
        ratio=None,
        target=None,
        unit="fds/socket",
    )
    bench_line(
        f"{NAME}.push.p50",
        ours=round(ours["p50"], 1),
        floor=round(floor["p50"], 1),
        ratio=ratio(ours["p50"], floor["p50"]),
        target=None,
        unit="ms",
    )
    bench_line(
        f"{NAME}.push.p99",
        ours=round(ours["p99"], 1),
        floor=round(floor["p99"], 1),
        ratio=ratio(ours["p99"], floor["p99"]),
        target=f"ours<={P99_TARGET}",
        unit="ms",
    )
    bench_line(
        f"{NAME}.push.drops", ours=ours["drops"], floor=floor["drops"], ratio=None, target="ours==0", unit="replies"
    )
    for name in ("post_p50", "after_post_p50", "after_post_p99"):
        bench_line(
            f"{NAME}.push.{name}",
            ours=round(ours[name], 1),
            floor=round(floor[name], 1),
            ratio=ratio(ours[name], floor[name]),
            target=None,
            unit="ms",
        )


if __name__ == "__main__":
    raise SystemExit(main())
