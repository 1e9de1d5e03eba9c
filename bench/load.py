"""Load: throughput and latency under concurrent users, ours against a floor served by the same
server with the same process count in the same run.

Scenarios (bench.lib.locustfile; floors in bench.lib.floor_views, served only by bench.lib.settings):
- chat_list: GET /api/v1/chats?limit=50 vs a plain view running the same SQL, same bytes;
- message_send: POST /api/v1/chats/{id}/messages (each user writes into its own active chat) vs a
  plain view making the same service call (same SQL, rollups, outbox, push, hand-off) without the
  API layer (authentication, scopes, rate limit, idempotency lookup, DRF);
- visitor_message: POST /api/visitor/v1/{guid}/messages (each user is a visitor whose room exists)
  vs a plain view making the same service call for the contact, without the widget and session
  lookups, the rate limit and DRF;
- webhook_subscriptions: GET /api/v1/webhook-subscriptions (20 subscriptions, one page) vs a plain
  view running the same SQL, same bytes.

Each runs at 1, 20 and 100 users (locust, headless, users spawned at once, no wait between
requests; BENCH_LOAD_USERS="20" runs some), for each process count of BENCH_LOAD_WORKERS (default
"1 2": the server is started as the Procfile's web is, scripts/web.sh with WEB_CONCURRENCY). A
measurement runs BENCH_LOAD_WARMUP (2) + BENCH_LOAD_SECONDS (8) seconds; the warm-up is cut off. At 20 users there are
BENCH_LOAD_ROUNDS (3) rounds, ours and the floor alternating, and the figures are the medians: of two
rounds that is their mean, which one disturbed 8 s window drags (one run's two chat-list rounds gave
0.41 and 0.645); of three, the middle one.

Targets: at 20 users, requests/s at least 0.6 of the floor's and p99 under 250 ms; 0 errors on
both sides at every user count. BENCH lines: load_<scenario>_u<users>_w<processes>.

Before anything is written the widget is snapshotted (bench.lib.restore); afterwards every row the
run wrote (messages, visitor rooms, rollups, outbox events, idempotency keys, subscriptions) is
removed or put back and the fingerprint checked. Needs PostgreSQL (DATABASE_URL); run it with
REDIS_URL, as a deployment of several web processes must.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.lib.common import LOG_DIR, ROOT, Server, env_int, expect, prepare, session  # noqa: E402
from bench.lib.targets import bench, info  # noqa: E402

NAME = "load"
SCENARIOS = ("chat_list", "message_send", "visitor_message", "webhook_subscriptions")
USERS = (1, 20, 100)
TARGET_USERS = 20
CHATS = 100
VISITORS = 100
SUBSCRIPTIONS = 20
UNLIMITED = "1000000000"


@dataclass
class Figures:
    rps: float
    p50: float
    p95: float
    p99: float
    errors: int
    requests: int


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]


def run_locust(base: str, plan: dict, users: int, warmup: int, seconds: int) -> Figures:
    with tempfile.TemporaryDirectory(prefix="bench-load-") as tmp:
        plan = {**plan, "samples": str(Path(tmp) / "samples.json")}
        plan_path = Path(tmp) / "plan.json"
        plan_path.write_text(json.dumps(plan))
        command = [
            str(Path(sys.executable).parent / "locust"),
            "-f",
            str(ROOT / "bench" / "lib" / "locustfile.py"),
            "--headless",
            "--users",
            str(users),
            "--spawn-rate",
            str(users),
            "--run-time",
            f"{warmup + seconds + 1}s",
            "--stop-timeout",
            "10",
            "--host",
            base,
            "--only-summary",
            "--loglevel",
            "WARNING",
            "--exit-code-on-error",
            "0",
        ]
        with open(LOG_DIR / f"{NAME}.locust.log", "ab") as log:
            log.write(f"\n== {plan['scenario']} {plan['side']} {users} users\n".encode())
            log.flush()
            done = subprocess.run(
                command,
                env=dict(os.environ, BENCH_LOAD_PLAN=str(plan_path)),
                stdout=log,
                stderr=subprocess.STDOUT,
                timeout=warmup + seconds + 120,
            )
        if done.returncode != 0:
            raise RuntimeError(f"locust exited {done.returncode}; see {LOG_DIR / NAME}.locust.log")
        samples = json.loads(Path(plan["samples"]).read_text())
    if not samples:
        raise RuntimeError(f"{plan['scenario']} {plan['side']}: no request finished")
    first = min(end - ms / 1000 for end, ms, _ in samples)
    start = first + warmup
    stop = min(start + seconds, max(end for end, _, _ in samples))
    window = [(ms, failed) for end, ms, failed in samples if start <= end < stop]
    times = [ms for ms, _ in window]
    return Figures(
        rps=len(window) / (stop - start) if stop > start else 0.0,
        p50=percentile(times, 0.50),
        p95=percentile(times, 0.95),
        p99=percentile(times, 0.99),
        errors=sum(1 for _, _, failed in samples if failed),  # every error counts, warm-up included
        requests=len(window),
    )


def setup_rows(widget_id: int) -> tuple[list[dict], str]:
    """Visitors with a room each (their first message written before timing) and the subscriptions
    of the list; all go with the clean-up."""
    from apps.chats import services as chat_services
    from apps.chats.visitor import services as visitor_services
    from apps.core.models import Widget
    from apps.webhooks.models import Subscription

    widget = Widget.objects.get(pk=widget_id)
    visitors = []
    for n in range(VISITORS):
        session_, token = visitor_services.start_session(widget=widget, name=f"Load visitor {n}")
        visitor_services.send_message(
            widget=widget, contact=session_.contact, data=chat_services.MessageInput(body="Hello, I have a question")
        )
        visitors.append({"token": token, "contact_id": session_.contact_id, "guid": session_.contact.guid})
    Subscription.objects.bulk_create(
        Subscription(widget=widget, url=f"https://hooks.bench.invalid/load/{n}", events=["chat.closed"])
        for n in range(SUBSCRIPTIONS)
    )
    return visitors, widget.button_guid


def identical_answers(server: Server, data, plan: dict) -> None:
    """The read floors answer our bytes (printed; a difference is a FAILED line)."""
    from bench.lib.checks import first_difference

    ours, floor = session(data.token), session()
    pairs = {
        "chat_list": (
            f"{server.base}/api/v1/chats?limit=50",
            f"{server.base}/bench/chats?widget={data.widget_id}&limit=50",
        ),
        "webhook_subscriptions": (
            f"{server.base}/api/v1/webhook-subscriptions",
            f"{server.base}/bench/webhook-subscriptions?widget={data.widget_id}",
        ),
    }
    for scenario, (ours_url, floor_url) in pairs.items():
        verdict = first_difference(
            expect(ours.get(ours_url)).content, expect(floor.get(floor_url)).content, data.widget_id
        )
        print(f"{NAME}: {scenario}: ours vs floor bytes: {verdict}", flush=True)
        if not verdict.startswith("identical"):
            raise RuntimeError(f"{scenario}: the floor does not answer our bytes: {verdict}")


def measure(server: Server, plan: dict, workers: int) -> bool:
    warmup, seconds = env_int("BENCH_LOAD_WARMUP", 2), env_int("BENCH_LOAD_SECONDS", 8)
    rounds_at_target = env_int("BENCH_LOAD_ROUNDS", 3)
    scenarios = os.environ.get("BENCH_LOAD_SCENARIOS", " ".join(SCENARIOS)).split()
    all_ok = True
    for scenario in scenarios:
        for users in [int(n) for n in os.environ.get("BENCH_LOAD_USERS", " ".join(map(str, USERS))).split()]:
            rounds = rounds_at_target if users == TARGET_USERS else 1
            ours_runs, floor_runs = [], []
            for r in range(rounds):
                sides = ("ours", "floor") if r % 2 == 0 else ("floor", "ours")
                for side in sides:
                    figures = run_locust(
                        server.base, {**plan, "scenario": scenario, "side": side}, users, warmup, seconds
                    )
                    (ours_runs if side == "ours" else floor_runs).append(figures)
            name = f"{NAME}_{scenario}_u{users}_w{workers}"
            ratios = [o.rps / f.rps for o, f in zip(ours_runs, floor_runs, strict=True) if f.rps]
            for n, (o, f) in enumerate(zip(ours_runs, floor_runs, strict=True), 1):
                info(
                    f"{name}_round{n}",
                    ours_rps=o.rps,
                    floor_rps=f.rps,
                    ours_p99=o.p99,
                    floor_p99=f.p99,
                    ours_requests=o.requests,
                    floor_requests=f.requests,
                )

            def med(runs, attr):
                return statistics.median(getattr(run, attr) for run in runs)

            target = (
                "ratio>=0.6,p99<250,errors==0,floor_errors==0" if users == TARGET_USERS else "errors==0,floor_errors==0"
            )
            ok = bench(
                name,
                unit="requests/s,ms",
                target=target,
                ours=med(ours_runs, "rps"),
                floor=med(floor_runs, "rps"),
                ratio=statistics.median(ratios) if ratios else 0.0,
                ratio_lo=min(ratios) if ratios else 0.0,
                ratio_hi=max(ratios) if ratios else 0.0,
                p50=med(ours_runs, "p50"),
                p95=med(ours_runs, "p95"),
                p99=med(ours_runs, "p99"),
                floor_p50=med(floor_runs, "p50"),
                floor_p99=med(floor_runs, "p99"),
                errors=sum(run.errors for run in ours_runs),
                floor_errors=sum(run.errors for run in floor_runs),
                rounds=rounds,
            )
            all_ok = all_ok and ok
    return all_ok


def main() -> int:
    data = prepare(NAME)
    if data is None:
        return 0
    from apps.chats.models import Chat
    from bench.lib.restore import Restore

    chat_ids = list(
        Chat.objects.filter(widget_id=data.widget_id, status=Chat.Status.ACTIVE, agent__isnull=False)
        .exclude(pk=data.transcript_chat_id)
        .order_by("-created_at")
        .values_list("pk", flat=True)[:CHATS]
    )
    workers_list = [int(w) for w in os.environ.get("BENCH_LOAD_WORKERS", "1 2").split()]
    LOG_DIR.mkdir(parents=True, exist_ok=True)
    (LOG_DIR / f"{NAME}.locust.log").write_text("")
    with Restore(data.widget_id, chat_ids, name=NAME):
        visitors, guid = setup_rows(data.widget_id)
        plan = {
            "token": data.token,
            "widget_id": data.widget_id,
            "chat_ids": chat_ids,
            "visitors": visitors,
            "button_guid": guid,
        }
        env = {
            "VISITOR_MESSAGES_PER_ADDRESS_PER_MINUTE": UNLIMITED,
            "VISITOR_SESSIONS_PER_ADDRESS_PER_HOUR": UNLIMITED,
            # one widget's visitors together: 600 messages a minute by default, which a quiet machine
            # passes at 20 users (429s counted as errors)
            "VISITOR_WIDGET_BUDGET_SCALE": "0",
        }
        for workers in workers_list:
            started = time.monotonic()
            with Server(f"{NAME}_w{workers}", workers=workers, env=env) as server:
                for _ in range(3 * workers):  # every worker process up and warm
                    expect(session(data.token).get(f"{server.base}/api/v1/chats?limit=50"))
                identical_answers(server, data, plan)
                measure(server, plan, workers)
            print(f"{NAME}: {workers} web process(es) measured in {time.monotonic() - started:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
