"""Webhook delivery: throughput and commit-to-first-attempt latency of the real engine, each against
its floor measured in the same run on the same loopback HTTPS receiver.

Needs PostgreSQL (DATABASE_URL); SQLite is refused. Runs `migrate`, works in a widget of its own
(deleted at the end) and switches OUTBOUND_ALLOW_LOOPBACK on for itself. The receiver
(apps/webhooks/tests/receiver.py) runs as a separate process, so its threads do not compete with
the engine's for this interpreter's lock; it answers 200 at once and records when each request
arrived.

1. floor: a bare loop of N signed POSTs (both signatures computed per request) over one pooled
   `requests.Session`: posts/s, and the per-POST round trip (p50, p99).
2. fan-out: N message.created events committed in one transaction, then fanned out one outbox
   event at a time (what the fan-out task runs): events/s, printed for information.
3. throughput: the N due deliveries sent by `deliver_due` (its thread pool of 16 over pooled
   guarded sessions, leases, Attempt rows) until all are delivered: deliveries/s vs the floor.
4. end to end: N more events committed in one transaction; a second process (a fan-out worker)
   runs the fan-out task of each event while this one runs `deliver_due` (a delivery worker), as
   two Celery worker processes would: events/s from commit until all are delivered, vs the floor.
5. latency: L events, each committed alone and handed off as in production but with Celery eager
   (the broker hop is left out): commit -> outbox fan-out task -> deliver_due task -> first request
   at the receiver. p50 and p99 vs the floor's round trip.

Environment: BENCH_WEBHOOK_EVENTS (N, default 2000), BENCH_WEBHOOK_LATENCY_EVENTS (L, default 200).
Prints BENCH lines; `make bench` collects them.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
N = int(os.environ.get("BENCH_WEBHOOK_EVENTS", "2000"))
L = int(os.environ.get("BENCH_WEBHOOK_LATENCY_EVENTS", "200"))
CONCURRENCY = 16
TARGET = 0.5


def refuse_unless_postgres() -> None:
    url = os.environ.get("DATABASE_URL", "")
    if not url:
        sys.exit("webhooks bench: refused: DATABASE_URL is not set; it needs PostgreSQL (postgres://user@host:port/db)")
    if not url.startswith(("postgres://", "postgresql://", "pgsql://")):
        sys.exit(f"webhooks bench: refused: DATABASE_URL names {url.split(':', 1)[0]}, not PostgreSQL")


def configure_environment() -> None:
    os.environ.update(
        {
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "OUTBOUND_ALLOW_LOOPBACK": "1",
            "CELERY_TASK_ALWAYS_EAGER": "1",  # the latency phase hands off inline (no broker hop)
            "DEBUG": "0",  # no per-query log in the measured process
            "LOG_LEVEL": "WARNING",  # no log line per eager task
        }
    )
    sys.path.insert(0, str(ROOT))


def start_receiver() -> tuple[subprocess.Popen, int, str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "apps.webhooks.tests.receiver"],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    ready = json.loads(process.stdout.readline())
    return process, ready["port"], ready["ca_path"]


def stop_receiver(process: subprocess.Popen) -> list[dict]:
    out, _ = process.communicate(timeout=60)
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def bench_line(name: str, ours: float, floor: float, unit: str, target: float | None = None) -> str:
    ratio = ours / floor if floor else float("inf")
    line = f"BENCH {name} ours={ours:.1f} floor={floor:.1f} ratio={ratio:.3f}"
    if target is not None:
        line += f" target={target}"
    return f"{line} {unit}"


def floor_loop(url: str, ca_path: str, secret: str, count: int) -> tuple[float, list[float]]:
    """The bare loop: one pooled session, sequential signed POSTs. Returns posts/s and the round
    trips in seconds."""
    import requests

    from apps.webhooks import signing

    session = requests.Session()
    session.verify = ca_path
    session.trust_env = False
    round_trips = []
    for _ in range(20):
        session.post(url + "?warm", data=b"{}", timeout=10)
    started = time.perf_counter()
    for n in range(count):
        key = str(uuid.uuid4())
        body = json.dumps({"id": key, "type": "message.created", "data": {"n": n}}, separators=(",", ":")).encode()
        ts = int(time.time())
        headers = {
            "Content-Type": "application/json",
            "X-Service-Event": "message.created",
            "X-Service-Signature": "sha256=v1:" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest(),
            "X-Service-Idempotency-Key": key,
            "X-Service-Delivery": str(uuid.uuid4()),
            "X-Service-Timestamp": str(ts),
            "webhook-id": key,
            "webhook-timestamp": str(ts),
            "webhook-signature": signing.standard_signature(secret, key, ts, body),
        }
        sent = time.perf_counter()
        response = session.post(url, data=body, headers=headers, timeout=10)
        round_trips.append(time.perf_counter() - sent)
        assert response.status_code == 200, response.status_code
    elapsed = time.perf_counter() - started
    session.close()
    return count / elapsed, round_trips


def emit_batch(widget, count: int) -> list[str]:
    """`count` events in one committed transaction, hand-off suppressed (fan-out is timed apart)."""
    from unittest import mock

    from django.db import transaction

    from apps.core import events

    with mock.patch.object(events, "_hand_off", lambda event_id: None), transaction.atomic():
        emitted = [
            events.emit(
                widget,
                "message.created",
                chat_id=n,
                message_id=n,
                client_id="b" * 32,
                author_type="USER",
                source="api",
            )
            for n in range(count)
        ]
    return [str(event.pk) for event in emitted]


def main() -> int:
    refuse_unless_postgres()
    configure_environment()
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection, transaction

    if connection.vendor != "postgresql":
        sys.exit(f"webhooks bench: refused: the database is {connection.vendor}, not PostgreSQL")
    call_command("migrate", verbosity=0, interactive=False)

    from unittest import mock

    from apps.core import events
    from apps.core.testing.factories import WidgetFactory
    from apps.webhooks import delivery as engine
    from apps.webhooks import services
    from apps.webhooks.models import Delivery

    receiver, port, ca_path = start_receiver()
    os.environ["REQUESTS_CA_BUNDLE"] = ca_path
    widget = None
    try:
        tag = f"bench-webhooks-{uuid.uuid4().hex[:8]}"
        widget = WidgetFactory(name=tag, account__user__username=f"{tag}@bench.invalid")
        subscription, secret = services.create_subscription(
            widget=widget, url=f"https://127.0.0.1:{port}/hook", events=["message.created"]
        )

        # 1. floor
        floor_rate, floor_trips = floor_loop(f"https://127.0.0.1:{port}/floor", ca_path, secret, N)
        print(f"floor: {N} POSTs at {floor_rate:.0f}/s", flush=True)

        # 2. fan-out (informational)
        keys = emit_batch(widget, N)
        started = time.perf_counter()
        with mock.patch.object(engine, "trigger", lambda countdown=None: None):
            for key in keys:
                events.fan_out(key)
        fanout_rate = N / (time.perf_counter() - started)
        assert Delivery.objects.filter(subscription=subscription, status="pending").count() == N

        # 3. delivery throughput
        started = time.perf_counter()
        with mock.patch.object(engine, "trigger", lambda countdown=None: None):
            while Delivery.objects.filter(subscription=subscription, status="pending").exists():
                services.deliver_due(concurrency=CONCURRENCY)
        ours_rate = N / (time.perf_counter() - started)
        assert Delivery.objects.filter(subscription=subscription, status="delivered").count() == N
        print(f"engine: {N} deliveries at {ours_rate:.0f}/s (fan-out {fanout_rate:.0f} events/s)", flush=True)

        # 4. end to end: fan-out in a second process, delivery here
        keys = emit_batch(widget, N)
        worker = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--fan-out-worker"],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert worker.stdout.readline().strip() == "ready"  # a running worker: its start is not timed
        started = time.perf_counter()
        worker.stdin.write("\n".join(keys) + "\n")
        worker.stdin.close()
        with mock.patch.object(engine, "trigger", lambda countdown=None: None):
            while True:
                services.deliver_due(concurrency=CONCURRENCY)
                if (
                    worker.poll() is not None
                    and not Delivery.objects.filter(subscription=subscription, status="pending").exists()
                ):
                    break
                if not Delivery.objects.filter(subscription=subscription, status="pending").exists():
                    time.sleep(0.002)  # the fan-out worker is ahead of nothing: wait for its rows
        end_to_end_rate = N / (time.perf_counter() - started)
        assert worker.returncode == 0, worker.returncode
        assert Delivery.objects.filter(subscription=subscription, status="delivered").count() == 2 * N
        print(f"end to end: {N} events at {end_to_end_rate:.0f}/s (fan-out worker process + delivery)", flush=True)

        # 5. commit -> first attempt, through the on-commit hand-off (Celery eager)
        committed: dict[str, float] = {}
        for n in range(L):
            stamp: list[float] = []
            with transaction.atomic():
                transaction.on_commit(lambda stamp=stamp: stamp.append(time.time()))  # runs first
                event = events.emit(
                    widget,
                    "message.created",
                    chat_id=n,
                    message_id=n,
                    client_id="l" * 32,
                    author_type="USER",
                    source="api",
                )
            committed[str(event.pk)] = stamp[0]
            time.sleep(0.005)
        assert Delivery.objects.filter(subscription=subscription, status="delivered").count() == 2 * N + L
    finally:
        hits = stop_receiver(receiver)
        if widget is not None:
            try:
                widget.account.user.delete()  # the account, widget and every row of the run go with it
            except Exception as exc:  # a clean-up failure must not hide the figures
                print(f"webhooks bench: could not delete {widget.name}: {exc.__class__.__name__}", file=sys.stderr)

    first_arrival: dict[str, float] = {}
    for hit in hits:
        if hit["key"] in committed and hit["key"] not in first_arrival:
            first_arrival[hit["key"]] = hit["at"]
    assert len(first_arrival) == L, (len(first_arrival), L)
    latencies_ms = [(first_arrival[key] - committed[key]) * 1000 for key in committed]
    floor_ms = [trip * 1000 for trip in floor_trips]
    engine_hits = sum(1 for hit in hits if hit["path"] == "/hook")
    assert engine_hits == 2 * N + L, (engine_hits, 2 * N + L)

    print(f"latency: {L} events, mean {statistics.fmean(latencies_ms):.1f} ms", flush=True)
    print(bench_line("webhook_throughput", ours_rate, floor_rate, "events/s", TARGET))
    print(bench_line("webhook_end_to_end", end_to_end_rate, floor_rate, "events/s", TARGET))
    print(f"BENCH webhook_fanout ours={fanout_rate:.1f} events/s")
    print(bench_line("webhook_commit_to_attempt_p50", percentile(latencies_ms, 0.5), percentile(floor_ms, 0.5), "ms"))
    print(bench_line("webhook_commit_to_attempt_p99", percentile(latencies_ms, 0.99), percentile(floor_ms, 0.99), "ms"))
    return 0


def fan_out_worker() -> int:
    """The second process of phase 4: the fan-out task of every event id read from stdin."""
    configure_environment()
    import django

    django.setup()
    from unittest import mock

    from django.db import connection

    from apps.core import events
    from apps.webhooks import delivery as engine

    connection.ensure_connection()
    print("ready", flush=True)
    with mock.patch.object(engine, "trigger", lambda countdown=None: None):
        for line in sys.stdin:
            if line.strip():
                events.fan_out(line.strip())
    return 0


if __name__ == "__main__":
    sys.exit(fan_out_worker() if sys.argv[1:] == ["--fan-out-worker"] else main())
