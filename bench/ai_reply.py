"""The AI operator at work: from the visitor's POST of a message to the AI operator's answer arriving
on the visitor's websocket, with a fake provider answering at once, at 1, 20 and 100 concurrent chats.

As deployed: the web process under uvicorn (bench.lib.common.Server), the Procfile's worker (celery,
the same broker), Redis, PostgreSQL, and the OpenAI-format loopback fake in a process of its own
(`python -m tests.llm_fake`). Each chat is one visitor session of a widget with AI switched on, with
its websocket open as the widget holds it; a chat's loop POSTs a message to the visitor API and waits
until the AI's answer arrives on that socket, then sends the next.

The floor, measured in the same run at the same concurrency: one provider round trip (the official
OpenAI SDK straight to the same fake, `tests.llm_fake.sdk_floor_completion`), one message insert (a
plain INSERT of a message row in its own transaction) and that message's push to a visitor's socket
through the channel layer (the frame and the path of the AI's answer), until the socket has it; at
most FLOOR_THREADS at once. Targets (issue 50): at 1 chat our p50 at most 100 ms over the floor's p50
(`added<=100`), at 20 concurrent chats at most 150 ms over it, with no failed request
(`added<=150,errors==0`), and at 100 concurrent chats every chat answered: no failed request and
every message answered (`errors==0,unanswered==0`; the latency at 100 is printed, not a target).

Each level also prints an INFO line splitting a message's latency at the POST's answer: `post_p50`,
the visitor API's write of the message itself, and `after_post_p50`/`after_post_p99`, from that
answer to the AI's answer on the socket (the task's queueing, the worker's reads, the provider call,
the answer's write and its push).

Needs PostgreSQL (DATABASE_URL) and Redis (REDIS_URL, the broker and channel layer the processes
share); seeds its own widget (`bench-ai-reply-*`, deleted at the end). Knobs: BENCH_AI_REPLY_MESSAGES
(messages per level, default 200), BENCH_AI_REPLY_LEVELS (the concurrency levels, default "1 20 100").
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.lib.common import Server, env_int, session, skipped  # noqa: E402
from bench.lib.env import ROOT, postgres_problem  # noqa: E402

NAME = "ai_reply"
LEVELS = tuple(int(n) for n in os.environ.get("BENCH_AI_REPLY_LEVELS", "1 20 100").split())
# level -> its target (bench.lib.targets syntax).
TARGETS = {1: "added<=100", 20: "added<=150,errors==0", 100: "errors==0,unanswered==0"}
MESSAGES = env_int("BENCH_AI_REPLY_MESSAGES", 200)
# The floor's threads each hold a database connection: at most this many (PostgreSQL's default
# max_connections is 100, shared with the measured processes).
FLOOR_THREADS = 20
ANSWER = "Delivery takes two days."


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def start_fake() -> tuple[subprocess.Popen, dict]:
    process = subprocess.Popen(  # noqa: S603
        [sys.executable, "-m", "tests.llm_fake", "--flavor", "openai", "--text", ANSWER],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    return process, json.loads(process.stdout.readline())


def start_worker(entry: str, log: Path) -> subprocess.Popen:
    """A Procfile worker line (`worker`, `ai`), on this run's database and broker."""
    command = next(
        line.split(":", 1)[1].strip()
        for line in (ROOT / "Procfile").read_text().splitlines()
        if line.startswith(f"{entry}:")
    )
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    env.pop("CELERY_TASK_ALWAYS_EAGER", None)
    out = log.open("wb")
    return subprocess.Popen(  # noqa: S603
        ["sh", "-c", f"exec {command}"], cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
    )


def wait_ready(worker: subprocess.Popen, log: Path, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if " ready." in log.read_text(errors="replace"):
            return
        if worker.poll() is not None:
            raise RuntimeError(f"the worker exited ({worker.returncode}); see {log}")
        time.sleep(0.2)
    raise RuntimeError(f"the worker was not ready in {timeout} s; see {log}")


def stop(process: subprocess.Popen, *, group: bool) -> None:
    if process.poll() is not None:
        return
    if group:
        os.killpg(process.pid, signal.SIGTERM)
    else:
        process.terminate()
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL) if group else process.kill()
        process.wait()


def seed(fake: dict):
    from apps.agents import services as agent_services
    from apps.agents.models import Agent
    from apps.ai.models import AiSettings, Assistant, Credential
    from apps.core.crypto import encrypt_secret
    from tests.support.factories import WidgetFactory

    tag = uuid.uuid4().hex[:12]
    widget = WidgetFactory(name=f"bench-ai-reply-{tag}", api_enabled=True, account__user__username=f"bench-ai-{tag}")
    AiSettings.objects.create(widget=widget, enabled=True)
    assistant = Assistant.objects.create(
        widget=widget, name="Bench", is_default=True, system_prompt="You sell tea.", persona="Brief."
    )
    agent_services.create_ai_agent(widget=widget, name="Bot", assistant_id=assistant.pk, status=Agent.Status.ACTIVE)
    Credential.objects.create(
        widget=widget,
        provider="openai",
        api_key_encrypted=encrypt_secret(fake["api_key"]),
        base_url=fake["base_url"],
        model="gpt-4o-mini",
    )
    return widget


@contextmanager
def visitor(server: Server, widget, http):
    """A visitor session of the widget with its websocket open, as the widget holds it (the room
    comes with the first message): (the visitor API's base URL, its headers, `wait` for a message).

    `wait(accept)` reads frames until a `message` frame whose message `accept` takes arrives, and
    returns when it arrived (when the visitor sees it) and the message."""
    from websockets.sync.client import connect

    base = f"{server.base}/api/visitor/v1/{widget.button_guid}"
    r = http.post(f"{base}/sessions", json={}, timeout=30)
    assert r.status_code == 201, r.text
    token = r.json()["session_token"]
    ws_url = f"{server.base.replace('http://', 'ws://')}/ws/visitor/{widget.button_guid}/?session={token}"
    with connect(ws_url, open_timeout=30, compression=None) as ws:

        def wait(accept, timeout: float = 120) -> tuple[float, dict]:
            deadline = time.monotonic() + timeout
            while True:
                frame = json.loads(ws.recv(timeout=max(0.001, deadline - time.monotonic())))
                if frame.get("event") == "message" and accept(frame["message"]):
                    return time.perf_counter(), frame["message"]

        yield base, {"Authorization": f"Visitor {token}"}, wait


def is_answer(after: int):
    return lambda message: message["author"]["kind"] == "ai" and message["id"] > after


def run_level(server: Server, widget, level: int, messages: int = MESSAGES) -> tuple[list[float], list[float], int]:
    """`level` chats, each sending messages one after the other until MESSAGES are answered in all.
    Returns each answered message's latency, and each one's POST latency, in ms."""
    per_chat = max(1, messages // level)
    latencies: list[float] = []
    posts: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()

    def chat_loop() -> None:
        http = session()
        try:
            with visitor(server, widget, http) as (base, headers, wait):
                send(http, base, headers, wait)
        except Exception as exc:  # noqa: BLE001 - reported below
            with lock:
                errors.append(repr(exc))

    def send(http, base, headers, wait) -> None:
        mark = 0
        for i in range(per_chat + 1):  # the first message opens the room (not timed)
            started = time.perf_counter()
            r = http.post(f"{base}/messages", json={"type": "text", "body": f"Question {i}?"}, headers=headers)
            posted = time.perf_counter()
            assert r.status_code == 201, r.text
            seen_at, answer = wait(is_answer(max(mark, r.json()["id"])))
            mark = answer["id"]
            if i > 0:
                with lock:
                    latencies.append((seen_at - started) * 1000)
                    posts.append((posted - started) * 1000)

    threads = [threading.Thread(target=chat_loop) for _ in range(level)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        print(f"{NAME}.c{level}: {len(errors)} chats stopped on an error, first: {errors[0][:300]}", flush=True)
    return latencies, posts, len(errors)


def floor_level(server: Server, fake: dict, widget, level: int) -> list[float]:
    """The same number of round trips as `run_level`: an SDK completion, one message insert in its
    own transaction, and that message's push to the visitor's socket through the channel layer (the
    frame and the path the AI's answer takes), until the socket has it."""
    from django.db import connection, transaction

    from apps.chats.models import Message
    from apps.chats.payloads import visitor_message_frame
    from apps.platform.realtime import chat_group, push
    from tests.llm_fake import sdk_floor_client, sdk_floor_completion

    per_chat = max(1, MESSAGES // min(level, FLOOR_THREADS))
    out: list[float] = []
    lock = threading.Lock()

    def loop() -> None:
        client = sdk_floor_client(fake["base_url"], fake["api_key"], ca_file=fake["ca_path"])
        sdk_floor_completion(client, "warm up")
        try:
            http = session()
            with visitor(server, widget, http) as (base, headers, wait):
                # the room, and the AI's answer to its first message out of the way (not timed)
                r = http.post(f"{base}/messages", json={"type": "text", "body": "Hello"}, headers=headers)
                assert r.status_code == 201, r.text
                chat_id = r.json()["chat_id"]
                wait(is_answer(r.json()["id"]))
                for _ in range(per_chat):
                    started = time.perf_counter()
                    text = sdk_floor_completion(client, "How long is delivery?")
                    with transaction.atomic():
                        message = Message.objects.create(
                            widget_id=widget.pk, chat_id=chat_id, body=str(text), author_kind="ai"
                        )
                    frame = {"event": "message", "chat_id": chat_id, "message": visitor_message_frame(message)}
                    push([chat_group(chat_id)], frame)
                    seen_at, _ = wait(lambda m, pk=message.pk: m["id"] == pk)
                    with lock:
                        out.append((seen_at - started) * 1000)
        finally:
            connection.close()

    threads = [threading.Thread(target=loop) for _ in range(min(level, FLOOR_THREADS))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


def main() -> int:
    problem = postgres_problem()
    if problem:
        skipped(NAME, problem)
        return 0
    if not os.environ.get("REDIS_URL"):
        skipped(NAME, "REDIS_URL is not set: the worker needs the broker the web process uses")
        return 0
    fake_process, fake = start_fake()
    os.environ["OUTBOUND_ALLOW_LOOPBACK"] = "1"
    os.environ["REQUESTS_CA_BUNDLE"] = fake["ca_path"]
    from django.core.management import call_command

    call_command("migrate", verbosity=0, interactive=False)
    widget = seed(fake)
    log_dir = ROOT / "var" / "bench"
    log_dir.mkdir(parents=True, exist_ok=True)
    logs = {entry: log_dir / f"{NAME}.{entry}.log" for entry in ("worker", "ai")}
    workers = {entry: start_worker(entry, log) for entry, log in logs.items()}
    env = {
        "VISITOR_SESSIONS_PER_ADDRESS_PER_HOUR": "1000000",
        "VISITOR_MESSAGES_PER_ADDRESS_PER_MINUTE": "1000000",
        "VISITOR_SOCKETS_PER_ADDRESS": "1000000",
        # The widget's own budget (600 messages a minute) too: the levels send some 730 in about a minute.
        "VISITOR_WIDGET_BUDGET_SCALE": "0",
    }
    try:
        for entry, worker in workers.items():
            wait_ready(worker, logs[entry])
        with Server(NAME, env=env) as server:
            run_level(server, widget, 2, messages=10)  # warm up: connections, the worker's imports
            for level in LEVELS:
                ours, posts, failed = run_level(server, widget, level)
                if not ours:
                    print(f"BENCH {NAME}.c{level} FAILED (no chat got an answer; {failed} stopped on errors)")
                    continue
                floor = floor_level(server, fake, widget, level)
                p50, p99 = percentile(ours, 0.5), percentile(ours, 0.99)
                f50, f99 = percentile(floor, 0.5), percentile(floor, 0.99)
                name = f"{NAME}.c{level}"
                figures = dict(ours=round(p50, 1), floor=round(f50, 1), added=round(p50 - f50, 1))
                # Every chat sends max(1, MESSAGES // level) timed messages: those not answered are lost.
                unanswered = max(1, MESSAGES // level) * level - len(ours)
                extra = dict(
                    p99=round(p99, 1), floor_p99=round(f99, 1), n=len(ours), errors=failed, unanswered=unanswered
                )
                from bench.lib.targets import bench, info

                bench(name, unit="ms", target=TARGETS.get(level, TARGETS[100]), **figures, **extra)
                after = [total - post for total, post in zip(ours, posts, strict=True)]
                info(
                    name,
                    unit="ms",
                    post_p50=round(percentile(posts, 0.5), 1),
                    after_post_p50=round(percentile(after, 0.5), 1),
                    after_post_p99=round(percentile(after, 0.99), 1),
                )
                print(f"{name}: p50 {p50:.1f} ms p99 {p99:.1f} ms; floor p50 {f50:.1f} ms p99 {f99:.1f} ms", flush=True)
    finally:
        for worker in workers.values():
            stop(worker, group=True)
        fake_process.stdin.close()
        fake_process.wait(timeout=10)
        from apps.core.models import Widget

        Widget.objects.filter(pk=widget.pk).delete()
    return 0


if __name__ == "__main__":
    from bench.lib.env import setup_django

    setup_django()
    sys.exit(main())
