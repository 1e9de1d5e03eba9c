"""Push latency from a worker to a visitor's socket on the embedded default: a frame a Celery worker
pushes (apps.platform.realtime's relay through the database) until the visitor's socket receives it.
Target: p50 under 250 ms and p99 under 500 ms.

The service is the Procfile's web process (tests/live.py) on the embedded default with the seeded
demo widget. A visitor writes once (so it has a room) and holds its socket open; this process, set
up as a worker of that VAR_DIR (`relay_to_web`), pushes BENCH_RUNS frames (default 200) to the room
one after another, each stamped with the time it was sent, and waits for each on the socket.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import requests

# Run as `python bench/relay.py`, this file's folder comes first on sys.path, where bench/channels.py
# would shadow the channels package the service imports: the project's root takes its place.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.insert(0, str(_HERE.parent))

from bench.lib.common import bench_line, env_int  # noqa: E402
from tests.live import Template, start_web  # noqa: E402

NAME = "relay_push"


def main() -> int:
    runs = env_int("BENCH_RUNS", 200)
    with tempfile.TemporaryDirectory() as where:
        where = Path(where)
        template = Template.build(where / "template")
        var_dir = template.copy(where / "run")
        web = start_web(var_dir, template.seed, where / "web.log")
        try:
            latencies = measure(web, var_dir, runs)
        finally:
            web.terminate()
    latencies.sort()
    p50 = statistics.median(latencies)
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]
    bench_line(f"{NAME}.p50", ours=round(p50, 1), floor=None, ratio=None, target="ours<250", unit="ms")
    bench_line(f"{NAME}.p99", ours=round(p99, 1), floor=None, ratio=None, target="ours<500", unit="ms")
    # A missed target is not a failed run: bench.lib.targets gives the verdict from the BENCH lines.
    return 0


def measure(web, var_dir: Path, runs: int) -> list[float]:
    import websockets

    guid = web.seed["button_guid"]
    session = web.visitor_session()
    posted = requests.post(
        web.url(f"/api/visitor/v1/{guid}/messages"),
        json={"type": "text", "body": "hello"},
        headers={"Authorization": f"Visitor {session}"},
        timeout=10,
    )
    posted.raise_for_status()
    chat_id = posted.json()["chat_id"]

    # this process becomes a worker of the measured service's VAR_DIR, on the embedded default as the
    # service is (make bench gives the driver DATABASE_URL and REDIS_URL for the other benchmarks)
    os.environ.pop("DATABASE_URL", None)
    os.environ.pop("REDIS_URL", None)
    os.environ["VAR_DIR"] = str(var_dir)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from apps.platform import realtime

    realtime.relay_to_web = True

    async def run() -> list[float]:
        uri = f"{web.ws_base}/ws/visitor/{guid}/?session={session}"
        seen = []
        async with websockets.connect(uri, open_timeout=10) as socket_:
            await asyncio.sleep(0.5)  # the web process's relay reader starts with the first socket
            for n in range(runs):
                sent = time.time()
                await asyncio.to_thread(
                    realtime.push, [realtime.chat_group(chat_id)], {"event": "bench", "n": n, "sent": sent}
                )
                while True:
                    frame = json.loads(await asyncio.wait_for(socket_.recv(), 10))
                    if frame.get("event") == "bench" and frame.get("n") == n:
                        seen.append((time.time() - frame["sent"]) * 1000)
                        break
        return seen

    return asyncio.run(run())


if __name__ == "__main__":
    raise SystemExit(main())
