"""Transcript export: time and memory of the service, and of the served ASGI stack (uvicorn).

Runs on a throw-away SQLite database under a temporary VAR_DIR (never DATABASE_URL/REDIS_URL).
Two chats: one cut by the 10 MiB budget (170 bodies of 64 Ki characters) and one cut by the
50 000-message budget (short messages). For each:

- in process: wall time and tracemalloc peak while consuming `export_transcript`;
- through uvicorn: time to first byte, total time, bytes and body reads of a streamed GET, and the
  server's resident-set growth (VmRSS, VmHWM from /proc) across the download.

Prints INFO lines for the service and a BENCH line per served download (target: the server's peak
RSS grows by less than 19 MiB, the transcript benchmark's 20 MB); `make bench` checks them.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import tracemalloc
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VAR = tempfile.mkdtemp(prefix="bench-transcript-")
ENV = {
    **{k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")},
    "VAR_DIR": VAR,
    "APP_MODE": "test",
    "DJANGO_SETTINGS_MODULE": "config.settings",
    "PYTHONPATH": str(ROOT),
}
os.environ.clear()
os.environ.update(ENV)
sys.path.insert(0, str(ROOT))

import django  # noqa: E402

django.setup()

from django.core.management import call_command  # noqa: E402

from apps.chats import transcript  # noqa: E402
from apps.chats.models import Chat, Contact, Message  # noqa: E402
from apps.core import services  # noqa: E402
from bench.lib.targets import bench, info  # noqa: E402
from tests.support.factories import WidgetFactory  # noqa: E402

T0 = datetime(2024, 5, 1, 9, 0, tzinfo=UTC)


def seed(widget, name: str, count: int, body) -> Chat:
    contact = Contact.objects.create(widget=widget, name=name)
    chat = Chat.objects.create(widget=widget, contact=contact, channel=name)
    batch = []
    for i in range(count):
        batch.append(
            Message(
                widget=widget,
                chat=chat,
                body=body(i),
                author_kind=Message.Author.CLIENT if i % 2 else Message.Author.AGENT,
                created_at=T0 + timedelta(seconds=i),
            )
        )
        if len(batch) == 1000:
            Message.objects.bulk_create(batch)
            batch = []
    Message.objects.bulk_create(batch)
    return chat


def in_process(widget, chat: Chat, label: str) -> None:
    """One untraced run for the time, one under tracemalloc (much slower) for the peak."""

    def consume() -> tuple[int, int]:
        total = pieces = 0
        for piece in transcript.export_transcript(widget=widget, chat=chat):
            total += len(piece)
            pieces += 1
        return total, pieces

    started = time.perf_counter()
    total, pieces = consume()
    elapsed = time.perf_counter() - started
    tracemalloc.start()
    consume()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    info(
        f"transcript_service_{label}",
        bytes=total,
        pieces=pieces,
        seconds=round(elapsed, 2),
        tracemalloc_peak_mib=round(peak / 2**20, 1),
    )


def proc_status(pid: int) -> dict[str, int]:
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            out[key] = int(value.split()[0])  # kB
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def served(chats: dict[str, Chat], token: str) -> None:
    import httpx

    port = free_port()
    server = subprocess.Popen(  # noqa: S603
        [sys.executable, "-m", "uvicorn", "config.asgi:application", "--port", str(port), "--log-level", "warning"],
        cwd=ROOT,
        env=ENV,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        for _ in range(100):
            try:
                httpx.get(f"{base}/healthz", timeout=1)
                break
            except httpx.TransportError:
                time.sleep(0.1)
        headers = {"Authorization": f"Bearer {token}"}
        # Warm the server (imports, first connection) with a small chat before measuring memory.
        httpx.get(f"{base}/api/v1/chats/{chats['warm'].pk}/transcript", headers=headers, timeout=60).read()
        for label, chat in chats.items():
            if label == "warm":
                continue
            before = proc_status(server.pid)
            started = time.perf_counter()
            first = None
            total = reads = 0
            with httpx.stream("GET", f"{base}/api/v1/chats/{chat.pk}/transcript", headers=headers, timeout=60) as r:
                assert r.status_code == 200, r.status_code
                assert "content-length" not in r.headers
                for chunk in r.iter_raw():
                    if first is None:
                        first = time.perf_counter() - started
                    total += len(chunk)
                    reads += 1
            elapsed = time.perf_counter() - started
            after = proc_status(server.pid)
            growth = (after["VmHWM"] - before["VmHWM"]) / 1024
            # the served download may not grow the server's peak memory by more than the transcript
            # benchmark's RSS target (20 MB)
            bench(
                f"transcript_asgi_{label}",
                unit="MiB",
                target="hwm_growth_mib<19",
                bytes=total,
                reads=reads,
                ttfb_ms=round(first * 1000),
                seconds=round(elapsed, 2),
                rss_before_mib=round(before["VmRSS"] / 1024),
                rss_after_mib=round(after["VmRSS"] / 1024),
                hwm_growth_mib=round(growth, 1),
            )
    finally:
        server.terminate()
        server.wait(timeout=10)


def main() -> None:
    call_command("migrate", verbosity=0)
    widget = WidgetFactory()
    token = services.issue_token(widget=widget, scopes=["transcripts:read"]).plaintext
    started = time.perf_counter()
    chats = {
        "warm": seed(widget, "warm", 10, lambda i: f"hello {i}"),
        "size": seed(widget, "size", 170, lambda i: f"{i:04d}" + "x" * (64 * 1024 - 4)),
        "count": seed(widget, "count", transcript.MAX_MESSAGES + 10, lambda i: f"message {i}"),
    }
    print(f"seeded in {time.perf_counter() - started:.1f} s under {VAR} (removed at the end)")
    for label in ("size", "count"):
        in_process(widget, chats[label], label)
    served(chats, token)


if __name__ == "__main__":
    try:
        main()
    finally:
        shutil.rmtree(VAR, ignore_errors=True)
