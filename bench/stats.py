"""Statistics endpoints over a one-year window vs the direct SQL aggregate over the base tables,
measured in the same run. Target: ours at most 0.25 of the floor, and figures equal to it.

Data set (bench/lib/stats_seed.py): one widget with 1 000 000 chats, 10 000 000 messages and 200
agents over a year at BENCH_SCALE=1.0, seeded in PostgreSQL; then `manage.py rebuild_stats_facts`
builds the statistics facts (again when BENCH_STATS_REBUILD=1, or when the widget has none).

For each endpoint: ours is the real service (uvicorn, bench.lib.common.Server) answering over HTTP
(the agent list: every page at limit=100); the floor is the direct SQL aggregate
(bench/lib/stats_direct.py) run from this process. The figures of both are compared first, for the
one-year window and for a window whose edges fall inside days (partial days); a mismatch prints a
FAIL line and the run exits non-zero. Medians: ours over BENCH_ITERATIONS requests (default 20), the
floor over BENCH_FLOOR_RUNS executions (default 3). Needs PostgreSQL (DATABASE_URL); SQLite is refused.
"""

import statistics
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.lib.common import Server, env_int, expect, report_latency, session, skipped  # noqa: E402
from bench.lib.env import migrations_pending, postgres_problem, setup_django  # noqa: E402

NAME = "stats"
TARGET = 0.25


def _median_ms(fn, runs: int) -> float:
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


def _first_difference(ours, direct) -> str:
    if isinstance(ours, dict) and isinstance(direct, dict):
        for key in sorted(set(ours) | set(direct), key=str):
            if ours.get(key) != direct.get(key):
                return f"{key}: ours {ours.get(key)!r} vs direct {direct.get(key)!r}"
    if isinstance(ours, list) and isinstance(direct, list):
        if len(ours) != len(direct):
            return f"{len(ours)} rows vs {len(direct)} rows"
        for i, (a, b) in enumerate(zip(ours, direct, strict=True)):
            if a != b:
                return f"row {i}: ours {a!r} vs direct {b!r}"
    return f"ours {ours!r} vs direct {direct!r}"


def main() -> int:
    problem = postgres_problem()
    if problem:
        skipped(NAME, problem)
        return 0
    setup_django()
    if migrations_pending():
        print(f"BENCH {NAME} FAILED (unapplied migrations: run `manage.py migrate` on DATABASE_URL first)", flush=True)
        return 1

    from django.core.management import call_command
    from django.db import connection

    from apps.agents.models import Agent
    from apps.core.models import Widget
    from apps.core.services import issue_token
    from apps.stats.models import DailyWidgetFacts
    from bench.lib import stats_direct as direct
    from bench.lib.stats_seed import WIDGET_NAME, ensure_seeded

    scale, seeded = ensure_seeded()
    widget = Widget.objects.get(name=WIDGET_NAME)
    rebuild = seeded or env_int("BENCH_STATS_REBUILD", 0) or not DailyWidgetFacts.objects.filter(widget=widget).exists()
    if rebuild:
        started = time.monotonic()
        call_command("rebuild_stats_facts", "--widget", str(widget.pk))
        print(f"\n{NAME}: rebuild_stats_facts took {time.monotonic() - started:.0f} s", flush=True)
    with connection.cursor() as cur:
        cur.execute(
            "SELECT (SELECT count(*) FROM chats_chat WHERE widget_id = %(w)s), "
            "(SELECT count(*) FROM chats_message WHERE widget_id = %(w)s)",
            {"w": widget.pk},
        )
        chats, messages = cur.fetchone()
    agents = Agent.objects.filter(widget=widget).count()
    print(f"{NAME}: scale {scale}: widget {widget.pk}, {chats} chats, {messages} messages, {agents} agents", flush=True)

    today = datetime.now(direct.MSK).date()
    year = (today - timedelta(days=364), today + timedelta(days=1))  # 365 Moscow days, today included
    windows = {
        "one year": {"from": year[0].isoformat(), "to": year[1].isoformat()},
        "partial days": {"from": f"{year[0]}T13:37:00", "to": f"{today}T09:15:30"},
    }
    operator = Agent.objects.filter(widget=widget, type=Agent.Type.HUMAN, is_owner=False).order_by("id").first().pk
    token = issue_token(widget=widget, scopes=["stats:read"], name="bench-stats").plaintext
    iterations, floor_runs = env_int("BENCH_ITERATIONS", 20), env_int("BENCH_FLOOR_RUNS", 3)
    failures = 0

    with Server(NAME) as server:
        client = session(token)
        base = f"{server.base}/api/v1"

        def get(path, params):
            return expect(client.get(f"{base}{path}", params=params)).json()

        def every_agent(params):
            rows, cursor = {}, None
            while True:
                page = get("/agents/stats", {**params, "limit": 100, **({"cursor": cursor} if cursor else {})})
                rows.update({row["agent_id"]: row["metrics"] for row in page["data"]})
                cursor = page["next_cursor"]
                if cursor is None:
                    return rows

        cases = [
            ("stats_totals", lambda p: get("/stats", p)["data"]["metrics"], direct.widget_stats),
            (
                "stats_first_response",
                lambda p: get("/stats", {**p, "metric": "avg_first_response_seconds"})["data"]["metrics"],
                direct.first_response,
            ),
            ("stats_channels", lambda p: get("/stats/channels", p)["data"], direct.channel_stats),
            ("stats_timeseries", lambda p: get("/stats/timeseries", p)["data"]["buckets"], direct.timeseries),
            ("stats_agents", every_agent, direct.agent_stats),
            (
                "stats_agent",
                lambda p: {operator: get(f"/agents/{operator}/stats", p)["data"]["metrics"]},
                lambda cur, w, a, b: direct.agent_stats(cur, w, a, b, agent_id=operator),
            ),
        ]
        for name, ours, floor in cases:
            for label, params in windows.items():
                window = get("/stats", {**params, "metric": "chats_total"})["data"]
                start, end = (datetime.fromisoformat(window[k]) for k in ("from", "to"))
                with connection.cursor() as cur:
                    expected = floor(cur, widget.pk, start, end)
                got = ours(params)
                if got == expected:
                    print(f"{name} ({label}): figures equal the direct count", flush=True)
                else:
                    failures += 1
                    print(
                        f"FAIL {name} ({label}): figures differ from the direct count: "
                        f"{_first_difference(got, expected)}",
                        flush=True,
                    )
            params = windows["one year"]
            start, end = (datetime.fromisoformat(get("/stats", params)["data"][k]) for k in ("from", "to"))
            for _ in range(3):
                ours(params)

            def run_floor(start=start, end=end, floor=floor):
                with connection.cursor() as cur:
                    floor(cur, widget.pk, start, end)

            floor_ms = _median_ms(run_floor, floor_runs)
            ours_ms = _median_ms(lambda ours=ours, params=params: ours(params), iterations)
            report_latency(name, ours_ms, floor_ms, target=TARGET)
    if failures:
        print(f"FAIL {NAME}: {failures} figure comparison(s) differ from the direct count", flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
