"""What every benchmark shares: preparing the data, the measured server, the timer, the BENCH line.

The server is the real service: `uvicorn config.asgi:application` (as in the Procfile) in a
subprocess on a free loopback port, with the driver's DATABASE_URL / REDIS_URL, a rate limit too
high to matter, DEBUG off, and DJANGO_SETTINGS_MODULE=bench.lib.settings (the project's settings
plus the floor views under /bench/). Ours and the floor are served by the same process, so the
ratio is what our code adds over a plain Django view doing the same database work.

Figures are medians: each round times `iterations` sequential keep-alive requests of each, ours and
the floor alternating call by call (a shared machine runs at different speeds from one second to the
next, and alternate calls see the same speed), and takes each side's median; the figure is the median
of the rounds.
Knobs: BENCH_ROUNDS (default 5), BENCH_ITERATIONS (per benchmark default), BENCH_WARMUP (default 20).
"""

from __future__ import annotations

import atexit
import os
import shlex
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import requests

from .env import ROOT, migrations_pending, postgres_problem, setup_django
from .targets import bench, info

LOG_DIR = ROOT / "var" / "bench"


def env_int(name: str, default: int) -> int:
    raw = os.environ.get(name, "")
    return int(raw) if raw.strip() else default


def bench_line(name: str, *, ours, floor, ratio, target, unit: str) -> bool | None:
    """The BENCH line of a figure and its target (bench.lib.targets: a check such as "ratio<=2" or
    "ours<20"; a bare number means ratio<=number); target None prints an INFO line instead."""
    if target is None:
        info(name, ours=ours, floor=floor, ratio=ratio, unit=unit)
        return None
    if isinstance(target, int | float):
        target = f"ratio<={target}"
    ratio = ratio if isinstance(ratio, int | float) else None
    return bench(name, unit=unit, target=target, ours=ours, floor=floor, ratio=ratio)


def skipped(name: str, reason: str) -> None:
    print(f"BENCH {name} SKIPPED ({reason})", flush=True)


# --- data ------------------------------------------------------------------------------------------


@dataclass
class Dataset:
    scale: float
    widget_id: int
    token: str
    transcript_chat_id: int


def prepare(name: str) -> Dataset | None:
    """Django in this process, the seeded data set, and a fresh token of the main widget with every
    scope. Prints a SKIPPED line and returns None when there is no PostgreSQL."""
    problem = postgres_problem()
    if problem:
        skipped(name, problem)
        return None
    setup_django()
    if migrations_pending():
        print(f"BENCH {name} FAILED (unapplied migrations: run `manage.py migrate` on DATABASE_URL first)", flush=True)
        raise SystemExit(1)

    from apps.chats.models import Chat
    from apps.core.auth.scopes import ALL_SCOPES
    from apps.core.models import ApiToken, Widget
    from apps.core.services import issue_token

    from .seed import MAIN_WIDGET_NAME, TRANSCRIPT_CONTACT_NAME, ensure_seeded

    scale = ensure_seeded()
    widget = Widget.objects.get(name=MAIN_WIDGET_NAME)
    issued = issue_token(widget=widget, scopes=sorted(ALL_SCOPES), name="bench")
    token = issued.plaintext
    # The token goes when the benchmark ends, so runs leave no rows behind.
    atexit.register(lambda pk=issued.token.pk: ApiToken.objects.filter(pk=pk).delete())
    chat = Chat.objects.get(widget=widget, contact__name=TRANSCRIPT_CONTACT_NAME)
    print(f"{name}: data set scale {scale}, widget {widget.pk}, transcript chat {chat.pk}", flush=True)
    return Dataset(scale=scale, widget_id=widget.pk, token=token, transcript_chat_id=chat.pk)


# --- the measured server ---------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Server:
    """The web server in a subprocess; use as a context manager.

    It is started as the Procfile's web is (scripts/web.sh, WEB_CONCURRENCY=workers: above one process,
    uvicorn's supervisor with a listening socket per process; the web's database connection pool), so
    ours and the floor share the process count and the deployment's settings.

    BENCH_WEB_COMMAND replaces that command, to measure another server or topology against it in the
    same harness: a shell command with {port} and {workers} in it, e.g.
    `granian --interface wsgi --port {port} --workers {workers} --blocking-threads 4 config.wsgi:application`
    (the environment is the same). BENCH_SERVER_START_SECONDS (default 60): how long the server may
    take to answer /healthz (a busy machine imports Django slowly)."""

    def __init__(self, name: str, *, workers: int = 1, env: dict[str, str] | None = None):
        self.name = name
        self.workers = workers
        self.extra_env = env or {}
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen | None = None

    def __enter__(self) -> Server:
        LOG_DIR.mkdir(parents=True, exist_ok=True)
        env = dict(
            os.environ,
            DJANGO_SETTINGS_MODULE="bench.lib.settings",
            APP_MODE="development",
            DEBUG="0",
            API_RATE_LIMIT_PER_MINUTE="1000000000",
            PYTHONPATH=str(ROOT),
            **self.extra_env,
        )
        env["WEB_CONCURRENCY"] = str(self.workers)
        env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
        custom = os.environ.get("BENCH_WEB_COMMAND", "").strip()
        if custom:
            command = shlex.split(custom.format(port=self.port, workers=self.workers))
        else:
            command = [
                str(ROOT / "scripts" / "web.sh"),
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--no-access-log",
            ]
        with open(LOG_DIR / f"{self.name}.server.log", "wb") as log:  # the child keeps its own descriptor
            self.proc = subprocess.Popen(
                command,
                cwd=ROOT,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        patience = env_int("BENCH_SERVER_START_SECONDS", 60)
        deadline = time.monotonic() + patience
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the server exited ({self.proc.returncode}); see {LOG_DIR / self.name}.server.log")
            try:
                requests.get(f"{self.base}/healthz", timeout=5)
                return self
            except (requests.ConnectionError, requests.Timeout):  # a slow first answer under load: ask again
                time.sleep(0.2)
        self.__exit__(None, None, None)
        raise RuntimeError(f"the server did not answer within {patience} s")

    def __exit__(self, *exc) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def rss_kib(self) -> int:
        """Resident memory of the server process (VmRSS), in KiB."""
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        raise RuntimeError("no VmRSS")


class RssSampler:
    """Peak VmRSS of the server while the block runs, sampled every `interval` seconds."""

    def __init__(self, server: Server, interval: float = 0.05):
        self.server, self.interval = server, interval
        self.peak = 0
        self._stop = threading.Event()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, self.server.rss_kib())
            self._stop.wait(self.interval)

    def __enter__(self) -> RssSampler:
        self.peak = self.server.rss_kib()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self.server.rss_kib())


# --- timing ----------------------------------------------------------------------------------------


def session(token: str | None = None) -> requests.Session:
    s = requests.Session()
    s.trust_env = False
    if token:
        s.headers["Authorization"] = f"Bearer {token}"
    return s


def expect(response: requests.Response, status: int = 200) -> requests.Response:
    if response.status_code != status:
        raise RuntimeError(f"{response.request.method} {response.url}: {response.status_code} {response.text[:500]}")
    return response


def timed(fn: Callable[[], object]) -> float:
    """One call of `fn`, in ms."""
    started = time.perf_counter()
    fn()
    return (time.perf_counter() - started) * 1000


def compare(
    ours: Callable[[], object],
    floor: Callable[[], object],
    *,
    iterations: int,
    rounds: int | None = None,
    warmup: int | None = None,
    env: bool = True,
) -> tuple[float, float]:
    """Median latency in ms of ours and of the floor (median of per-round medians; within a round the
    two alternate call by call, each going first every other call).
    With `env`, BENCH_ROUNDS / BENCH_ITERATIONS / BENCH_WARMUP override the defaults."""
    rounds = rounds or env_int("BENCH_ROUNDS", 5)
    if env:
        iterations = env_int("BENCH_ITERATIONS", iterations)
    warmup = env_int("BENCH_WARMUP", 20) if warmup is None else warmup
    for _ in range(warmup):
        ours()
        floor()
    ours_rounds, floor_rounds = [], []
    for _ in range(rounds):
        ours_samples: list[float] = []
        floor_samples: list[float] = []
        for i in range(iterations):
            pair = ((ours, ours_samples), (floor, floor_samples))
            for fn, into in pair if i % 2 == 0 else reversed(pair):
                into.append(timed(fn))
        ours_rounds.append(statistics.median(ours_samples))
        floor_rounds.append(statistics.median(floor_samples))
    return statistics.median(ours_rounds), statistics.median(floor_rounds)


def report_latency(name: str, ours_ms: float, floor_ms: float, *, target) -> bool | None:
    return bench_line(name, ours=ours_ms, floor=floor_ms, ratio=ours_ms / floor_ms, target=target, unit="ms")
