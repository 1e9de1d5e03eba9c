"""Webhook delivery: throughput and commit-to-first-attempt latency of the real engine, against fair
floors measured in the same run on the same loopback HTTPS receiver.

Needs PostgreSQL (DATABASE_URL); SQLite is refused. Runs `migrate`, works in a widget of its own
(deleted at the end, with every row of the run) and switches OUTBOUND_ALLOW_LOOPBACK on for itself.
The receiver (apps/webhooks/tests/receiver.py) runs as a separate process, so its threads do not
compete with the engine's for this interpreter's lock; it answers 200 at once and records when each
request arrived.

0. the Procfile's worker (celery, --concurrency 2, the same broker as the web process) is started
   and warmed as the floor is (the floor cuts its first second off, while its connections open):
   WARM_TASKS x FAN_OUT_BATCH events (400: 4 hand-offs, so both pool processes take some) go through
   it untimed, so its pool processes have their database connections and their TLS connections to
   the receiver open, as a running deployment's have.

Then ROUNDS rounds (BENCH_WEBHOOK_ROUNDS, 5) of steps 1-4; the floor is measured before the round's
runs in even rounds and after them in odd ones. Each BENCH line has the medians of the rounds and
the lowest and highest ratio of a round (both sides measured seconds apart): one disturbed run of
either side no longer decides the verdict (single runs of the same code gave 0.34-0.71).

1. seed: N message.created events committed in one transaction and fanned out in hand-offs of
   FAN_OUT_BATCH events (what the fan-out tasks of that transaction run): N due deliveries; the
   fan-out rate is printed (INFO).
2. floor: the receiver's capacity with as many connections as the engine holds open to one endpoint
   (its share of WEBHOOK_CONCURRENCY's places, `endpoint_share`), measured after the seed: locust
   (bench/lib/locust_receiver.py, gevent, one keep-alive HTTPS connection per user, that many users)
   POSTs signed bodies of the deliveries' size for BENCH_WEBHOOK_FLOOR_SECONDS (4)
   after a 1 s warm-up: POSTs/s. Also, once, a single pooled session's sequential round trip (the
   latency floor, printed).
3. throughput: the N due deliveries sent by `deliver_due` in this process (as deployed:
   WEBHOOK_CONCURRENCY places on the guarded client's outbound thread, leases, Attempt rows) until
   all are delivered: deliveries/s vs the floor. Target ratio >= 0.5.
4. end to end, as the deployment runs it: N more events are committed in one transaction with their
   hand-off (one fan_out_batch task per FAN_OUT_BATCH events), and the running worker fans them out
   and delivers them (fan_out_batch and deliver_due tasks on its two pool processes): events/s from
   commit until the receiver got the last one (its arrival times, not a poll of the database, which
   would take PostgreSQL's time from the run), vs the floor. Target ratio
   >= 0.5.
5. latency: L events, each committed alone and handed off as in production but with Celery eager
   (the broker hop is left out): commit -> outbox fan-out task (its transaction writes the
   delivery row; on commit the same process leases it by its delivery id and sends it,
   `delivery.send_new`) -> first request at the receiver. Target p50 < 10 ms; p99 printed (INFO).
   The same through the running worker (broker hop included) is printed as INFO.

Environment: BENCH_WEBHOOK_EVENTS (N, default 2000), BENCH_WEBHOOK_LATENCY_EVENTS (L, default 200),
BENCH_WEBHOOK_ROUNDS (5).
Prints BENCH lines with their targets; `make bench` checks them.
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
# the worker's warm-up before the end-to-end run: hand-offs of FAN_OUT_BATCH events each
WARM_TASKS = 4
TARGET = 0.5
# rounds of (seed, floor, engine, end to end); the figures are the medians, the ratios per round
ROUNDS = int(os.environ.get("BENCH_WEBHOOK_ROUNDS", "5"))
POLL = 0.1  # seconds between the checks of wait_delivered


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
    # Run as `python bench/webhooks.py`, this file's folder comes first on sys.path, and
    # bench/channels.py would shadow the channels package Django imports: drop the folder.
    here = Path(__file__).resolve().parent
    sys.path[:] = [path for path in sys.path if Path(path or ".").resolve() != here]
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


def receiver_capacity(port: int, secret: str, body_bytes: int, users: int) -> float:
    """POSTs/s the receiver answers from `users` keep-alive connections (locust, headless), after a
    1 s warm-up that is cut off."""
    import tempfile

    warmup, seconds = 1, env_int("BENCH_WEBHOOK_FLOOR_SECONDS", 4)
    with tempfile.TemporaryDirectory(prefix="bench-receiver-") as tmp:
        samples_path = Path(tmp) / "samples.json"
        log = ROOT / "var" / "bench" / "webhooks.locust.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("ab") as out:
            done = subprocess.run(
                [
                    str(Path(sys.executable).parent / "locust"),
                    "-f",
                    str(ROOT / "bench" / "lib" / "locust_receiver.py"),
                    "--headless",
                    "--users",
                    str(users),
                    "--spawn-rate",
                    str(users),
                    "--run-time",
                    f"{warmup + seconds + 1}s",
                    "--host",
                    f"https://127.0.0.1:{port}",
                    "--only-summary",
                    "--loglevel",
                    "WARNING",
                    "--exit-code-on-error",
                    "0",
                ],
                env=dict(
                    os.environ,
                    BENCH_RECEIVER_SECRET=secret,
                    BENCH_RECEIVER_BODY_BYTES=str(body_bytes),
                    BENCH_RECEIVER_SAMPLES=str(samples_path),
                ),
                stdout=out,
                stderr=subprocess.STDOUT,
                timeout=120,
            )
        if done.returncode != 0:
            raise RuntimeError(f"locust exited {done.returncode}; see {log}")
        samples = json.loads(samples_path.read_text())
    failed = sum(1 for _, _, bad in samples if bad)
    if failed:
        raise RuntimeError(f"the floor's POSTs failed {failed} times; see {log}")
    first = min(end - ms / 1000 for end, ms, _ in samples)
    start, stop = first + warmup, min(first + warmup + seconds, max(end for end, _, _ in samples))
    return sum(1 for end, _, _ in samples if start <= end < stop) / (stop - start)


def env_int(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    return int(raw) if raw else default


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
        emitted = [emit_one(widget, n, "b") for n in range(count)]
    return [str(event.pk) for event in emitted]


def emit_one(widget, n: int, tag: str):
    """The n-th message.created event of a phase (`tag`: one character, its client id's letter)."""
    from apps.core import events

    return events.emit(
        widget, "message.created", chat_id=n, message_id=n, client_id=tag * 32, author_type="USER", source="api"
    )


def start_worker(ca_path: str) -> subprocess.Popen:
    """The Procfile's worker line, as `make run` / honcho starts it, on this run's database and broker."""
    command = next(
        line.split(":", 1)[1].strip()
        for line in (ROOT / "Procfile").read_text().splitlines()
        if line.startswith("worker:")
    )
    env = dict(
        os.environ,
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        REQUESTS_CA_BUNDLE=ca_path,
        LOG_LEVEL="INFO",
    )
    env.pop("CELERY_TASK_ALWAYS_EAGER", None)
    log = (ROOT / "var" / "bench" / "webhooks.worker.log").open("wb")
    return subprocess.Popen(
        ["sh", "-c", f"exec {command}"], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )


def wait_for_worker(worker: subprocess.Popen, timeout: float = 90) -> None:
    log = ROOT / "var" / "bench" / "webhooks.worker.log"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if " ready." in log.read_text(errors="replace"):
            return
        if worker.poll() is not None:
            raise RuntimeError(f"the worker exited ({worker.returncode}); see {log}")
        time.sleep(0.2)
    raise RuntimeError(f"the worker was not ready in {timeout} s; see {log}")


def stop_worker(worker: subprocess.Popen) -> None:
    import signal

    if worker.poll() is None:
        os.killpg(worker.pid, signal.SIGTERM)
        try:
            worker.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(worker.pid, signal.SIGKILL)
            worker.wait()


def wait_delivered(subscription, count: int, timeout: float = 600) -> None:
    """Wait until `count` deliveries of the subscription are delivered. Not a clock: it polls every
    POLL seconds, and its count (a scan of the subscription's rows) would take a core's share from
    the measured worker if it polled faster."""
    from apps.webhooks.models import Delivery

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if Delivery.objects.filter(subscription=subscription, status="delivered").count() >= count:
            return
        time.sleep(POLL)
    raise RuntimeError(f"not every delivery was delivered within {timeout} s")


def last_arrival(hits: list[dict], keys: set[str]) -> float:
    """When (time.time) the receiver got the first request of the last of `keys` to arrive."""
    first: dict[str, float] = {}
    for hit in hits:
        if hit["path"] == "/hook" and hit["key"] in keys and hit["key"] not in first:
            first[hit["key"]] = hit["at"]
    assert len(first) == len(keys), (len(first), len(keys))
    return max(first.values())


def commit_one_at_a_time(widget, count: int, tag: str) -> dict[str, float]:
    """`count` events, each committed alone with its hand-off: event id -> commit time (time.time)."""
    from django.db import transaction

    committed: dict[str, float] = {}
    for n in range(count):
        stamp: list[float] = []
        with transaction.atomic():
            transaction.on_commit(lambda stamp=stamp: stamp.append(time.time()))  # runs first
            event = emit_one(widget, n, tag)
        committed[str(event.pk)] = stamp[0]
        time.sleep(0.005)
    return committed


def latencies(committed: dict[str, float], hits: list[dict]) -> list[float]:
    first_arrival: dict[str, float] = {}
    for hit in hits:
        if hit["key"] in committed and hit["key"] not in first_arrival:
            first_arrival[hit["key"]] = hit["at"]
    assert len(first_arrival) == len(committed), (len(first_arrival), len(committed))
    return [(first_arrival[key] - committed[key]) * 1000 for key in committed]


def main() -> int:
    refuse_unless_postgres()
    configure_environment()
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command
    from django.db import connection, transaction

    if connection.vendor != "postgresql":
        sys.exit(f"webhooks bench: refused: the database is {connection.vendor}, not PostgreSQL")
    call_command("migrate", verbosity=0, interactive=False)

    from unittest import mock

    from apps.core import events
    from apps.webhooks import delivery as engine
    from apps.webhooks import services
    from apps.webhooks.delivery.run import endpoint_share
    from apps.webhooks.models import Delivery
    from bench.lib.restore import drop_stale_hand_offs
    from bench.lib.targets import bench, info
    from tests.support.factories import WidgetFactory

    warm = WARM_TASKS * events.FAN_OUT_BATCH
    connections = endpoint_share(settings.WEBHOOK_CONCURRENCY)  # what the engine opens to the receiver
    receiver, port, ca_path = start_receiver()
    os.environ["REQUESTS_CA_BUNDLE"] = ca_path
    widget = worker = None
    try:
        tag = f"bench-webhooks-{uuid.uuid4().hex[:8]}"
        widget = WidgetFactory(name=tag, account__user__username=f"{tag}@bench.invalid")
        subscription, secret = services.create_subscription(
            widget=widget, url=f"https://127.0.0.1:{port}/hook", events=["message.created"]
        )

        # The Procfile's worker, started and warmed once (for the end-to-end runs). Fan-out tasks
        # other benchmarks left in the broker (of events no longer waiting) go first: the worker
        # would spend the measured time on them.
        stale = drop_stale_hand_offs()
        if stale:
            print(f"end to end: {stale} queued fan-out tasks of no waiting event removed first", flush=True)
        worker = start_worker(ca_path)
        wait_for_worker(worker)
        delivered = 0
        with worker_hand_offs():
            with transaction.atomic():
                for n in range(warm):
                    emit_one(widget, n, "w")
            delivered += warm
            wait_delivered(subscription, delivered)

        floors, engines, fanouts = [], [], []
        ends_at: list[tuple[float, set[str]]] = []  # per round: commit (time.time), the events
        single_rate = floor_trips = body_bytes = None
        for r in range(ROUNDS):
            # 1. seed: N due deliveries (fan-out timed for information)
            keys = emit_batch(widget, N)
            started = time.perf_counter()
            # (no trigger, and the fan-out's process takes none of its rows: all N stay due)
            with (
                mock.patch.object(engine.sweep, "trigger", lambda countdown=None: None),
                mock.patch.object(engine.first_attempts, "NEW_AT_ONCE", 0),
            ):
                for start in range(0, len(keys), events.FAN_OUT_BATCH):
                    events.fan_out_many(keys[start : start + events.FAN_OUT_BATCH])
            fanouts.append(N / (time.perf_counter() - started))
            assert Delivery.objects.filter(subscription=subscription, status="pending").count() == N
            if body_bytes is None:
                body_bytes = len(Delivery.objects.filter(subscription=subscription).first().body.encode())
                # the latency floor: one session's sequential round trip
                single_rate, floor_trips = floor_loop(f"https://127.0.0.1:{port}/floor", ca_path, secret, 300)

            # 2. the floor, after the seed: the receiver's capacity with the engine's connection
            # count; measured before our runs in even rounds, after them in odd ones
            if r % 2 == 0:
                floors.append(receiver_capacity(port, secret, body_bytes, connections))

            # 3. delivery throughput of the engine in this process
            started = time.perf_counter()
            with mock.patch.object(engine.sweep, "trigger", lambda countdown=None: None):
                while Delivery.objects.filter(subscription=subscription, status="pending").exists():
                    services.deliver_due()
            engines.append(N / (time.perf_counter() - started))
            delivered += N
            assert Delivery.objects.filter(subscription=subscription, status="delivered").count() == delivered

            # 4. end to end as deployed: N events committed in one transaction with their hand-off;
            # the running worker fans them out and delivers them
            # (timed from the commit to the receiver's arrival of the last event: see wait_delivered)
            with worker_hand_offs(), transaction_committed() as committed_at:
                round_keys = {str(emit_one(widget, n, "e").pk) for n in range(N)}
            ends_at.append((committed_at[0], round_keys))
            delivered += N
            wait_delivered(subscription, delivered)

            if r % 2 == 1:
                floors.append(receiver_capacity(port, secret, body_bytes, connections))

        print(f"floor: one sequential session answers {single_rate:.0f} POSTs/s", flush=True)
        # through the broker and the running worker, one event at a time
        with worker_hand_offs():
            deployed = commit_one_at_a_time(widget, L, "d")
            delivered += L
            wait_delivered(subscription, delivered)
        stop_worker(worker)

        # 5. commit -> first attempt, through the on-commit hand-off (Celery eager)
        committed = commit_one_at_a_time(widget, L, "l")
        delivered += L
        assert Delivery.objects.filter(subscription=subscription, status="delivered").count() == delivered
    finally:
        hits = stop_receiver(receiver)
        if worker is not None:
            stop_worker(worker)
        if widget is not None:
            try:
                widget.account.user.delete()  # the account, widget and every row of the run go with it
            except Exception as exc:  # a clean-up failure must not hide the figures
                print(f"webhooks bench: could not delete {widget.name}: {exc.__class__.__name__}", file=sys.stderr)

    latencies_ms = latencies(committed, hits)
    deployed_ms = latencies(deployed, hits)
    floor_ms = [trip * 1000 for trip in floor_trips]
    engine_hits = sum(1 for hit in hits if hit["path"] == "/hook")
    assert engine_hits == delivered, (engine_hits, delivered)
    ends = [N / (last_arrival(hits, keys) - committed) for committed, keys in ends_at]
    for r in range(ROUNDS):
        info(
            f"webhook_round{r + 1}",
            floor=floors[r],
            engine=engines[r],
            end_to_end=ends[r],
            fanout=fanouts[r],
            unit=f"POSTs/s (floor, {connections} connections), deliveries/s, events/s, events/s",
        )
    throughput = [ours / floor for ours, floor in zip(engines, floors, strict=True)]
    end_to_end = [ours / floor for ours, floor in zip(ends, floors, strict=True)]

    print(f"latency: {L} events, mean {statistics.fmean(latencies_ms):.1f} ms", flush=True)
    info("webhook_fanout", ours=statistics.median(fanouts), unit="events/s")
    median = statistics.median
    bench(
        "webhook_throughput",
        unit="deliveries/s",
        target=f"ratio>={TARGET}",
        ours=median(engines),
        floor=median(floors),
        ratio=median(throughput),
        ratio_lo=min(throughput),
        ratio_hi=max(throughput),
        connections=connections,
        rounds=ROUNDS,
    )
    bench(
        "webhook_end_to_end",
        unit="events/s",
        target=f"ratio>={TARGET}",
        ours=median(ends),
        floor=median(floors),
        ratio=median(end_to_end),
        ratio_lo=min(end_to_end),
        ratio_hi=max(end_to_end),
        connections=connections,
        rounds=ROUNDS,
    )
    bench(
        "webhook_commit_to_attempt_p50",
        unit="ms",
        target="ours<10",
        ours=percentile(latencies_ms, 0.5),
        floor=percentile(floor_ms, 0.5),
    )
    info(
        "webhook_commit_to_attempt_p99",
        ours=percentile(latencies_ms, 0.99),
        floor=percentile(floor_ms, 0.99),
        unit="ms",
    )
    info(
        "webhook_commit_to_attempt_deployed",
        p50=percentile(deployed_ms, 0.5),
        p99=percentile(deployed_ms, 0.99),
        unit="ms (through the broker and the Procfile's worker)",
    )
    return 0


class worker_hand_offs:
    """with worker_hand_offs(): ... — hand-offs go through the broker to the running worker (the
    benchmark's own process runs Celery eager otherwise)."""

    def __enter__(self) -> None:
        from celery import current_app

        current_app.conf.task_always_eager = False

    def __exit__(self, *exc):
        from celery import current_app

        current_app.conf.task_always_eager = True


class transaction_committed:
    """with transaction_committed() as at: ... — one transaction; at[0] is when it committed (time.time)."""

    def __enter__(self) -> list[float]:
        from django.db import transaction

        self.at: list[float] = []
        self.atomic = transaction.atomic()
        self.atomic.__enter__()
        transaction.on_commit(lambda: self.at.append(time.time()))  # runs before the hand-offs
        return self.at

    def __exit__(self, *exc):
        return self.atomic.__exit__(*exc)


if __name__ == "__main__":
    sys.exit(main())
