"""The AI operator at work, measured the way a visitor feels it: from the visitor's POST of a message to
the AI operator's answer arriving on the visitor's websocket, against a provider that takes as long as
real ones do, at 1, 20 and 100 concurrent chats; and, with a provider that answers at once, how many
answers the machine gives per second and what each answer costs each process.

As deployed: the web under uvicorn with one process per core, as scripts/web.sh starts it with Redis
(bench.lib.common.Server), the Procfile's `worker` and `ai` lines (celery, the same broker), Redis,
PostgreSQL, and the OpenAI-format loopback fakes in processes of their own (`python -m
tests.llm_fake`). Each chat is one visitor session of a widget with AI switched on, with its
websocket open as the widget holds it; a chat's loop POSTs a message to the visitor API and waits
until the AI's answer arrives on that socket, then sends the next; the chats are tasks of the
benchmark's one event loop (aiohttp), so its own work stays a small part of what is measured. The
levels' chats are all of one
widget, so at 20 and 100 the widget's cap on its AI answers at once
(AI_WIDGET_SLOTS) is part of what its visitors feel.

The provider: each completion waits a delay drawn from a lognormal distribution (median
BENCH_AI_REPLY_PROVIDER_MEDIAN_MS, default 800 ms, shape 0.5: a 99th percentile near 2.6 s), fixed
by the question's text (`tests.llm_fake.provider_delay`), so each answer's provider time is known and
the time our path adds is measured per answer: `added` is the median of (latency - that answer's
provider delay), `added_p99` its 99th percentile. The fake reports the delay it gave each question at
the end, and the run checks that every measured question is among them.

The floor, measured in the same run at the same concurrency (at most FLOOR_THREADS at once): one
provider round trip to the same fake (the official OpenAI SDK, `tests.llm_fake.sdk_floor_completion`,
with a question of the same kind), one message insert (a plain INSERT of a message row in its own
transaction) and that message's push to a visitor's socket through the channel layer (the frame and
the path of the AI's answer), until the socket has it; `floor_added` is the same difference for it.

Targets: at 1 chat `added<=100`; at 20 concurrent chats `added<=150`, `added_p99<=400` and no failed
request; at 100 concurrent chats every chat answered (no failed request, no message unanswered), the
visitor API's POST p99 at most 1 s and the 100 sockets open within 5 s of the chats starting
(`sockets_open`, ms; the latency at 100 is printed, not a target: a 2-core machine answers fewer AI
messages a second than 100 chats ask at that pace).

`ai_reply.throughput`: with a provider that answers at once, BENCH_AI_REPLY_THROUGHPUT_CHATS chats
(default 20) over 10 widgets in a closed loop: `answers_per_s` over the level, `per_core` (answers per second for each
core the processes kept busy: answers over their CPU seconds) and the CPU milliseconds per answer of
each process (`web`, `worker`, `ai`, and `postgres` and `redis` when this user can read them); no
target beyond no failed request.

A chat's first message opens its room and is not timed; every chat has its room open and its first
answer before any chat sends a timed message, and then each chat's first timed message comes after
a pause drawn uniformly up to BENCH_AI_REPLY_FIRST_PAUSE_MS (default 5 s: a visitor reads the answer
and types the next question), so the timed messages are those of chats in conversation rather than
of 100 visitors writing in the same instant; after that each chat writes as soon as it has its
answer. Each level also prints an INFO line splitting a message's latency at the POST's answer:
`post_p50`, the visitor API's write of the message itself, and `after_post_p50`/`after_post_p99`,
from that answer to the AI's answer on the socket; and `opening_post_p50`/`opening_post_p99`, the
POSTs that opened the rooms, all at once.

Needs PostgreSQL (DATABASE_URL) and Redis (REDIS_URL, the broker and channel layer the processes
share); seeds its own widgets (`bench-ai-reply-*`, deleted at the end). Knobs: BENCH_AI_REPLY_MESSAGES
(messages per level, default 200), BENCH_AI_REPLY_LEVELS (the concurrency levels, default "1 20 100").
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import aiohttp
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.lib.common import Server, env_int, session, skipped  # noqa: E402
from bench.lib.env import ROOT, postgres_problem  # noqa: E402

NAME = "ai_reply"
LEVELS = tuple(int(n) for n in os.environ.get("BENCH_AI_REPLY_LEVELS", "1 20 100").split())
# level -> its target (bench.lib.targets syntax).
TARGETS = {
    1: "added<=100",
    20: "added<=150,added_p99<=400,errors==0",
    100: "errors==0,unanswered==0,post_p99<=1000,sockets_open<=5000",
}
MESSAGES = env_int("BENCH_AI_REPLY_MESSAGES", 200)
PROVIDER_MEDIAN = env_int("BENCH_AI_REPLY_PROVIDER_MEDIAN_MS", 800) / 1000
PROVIDER_SIGMA = 0.5
# The longest pause (of a uniform draw) between a visitor's first answer and their next message:
# shorter than a person needs to read two sentences and type a short question.
FIRST_PAUSE = env_int("BENCH_AI_REPLY_FIRST_PAUSE_MS", 5000) / 1000
THROUGHPUT_CHATS = env_int("BENCH_AI_REPLY_THROUGHPUT_CHATS", 20)
THROUGHPUT_WIDGETS = 10
# The web processes, as scripts/web.sh starts them with Redis: one per core.
WEB_PROCESSES = os.cpu_count() or 1
# The floor's threads each hold a database connection: at most this many (PostgreSQL's default
# max_connections is 100, shared with the measured processes).
FLOOR_THREADS = 20
ANSWER = "Delivery takes two days."


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def start_fake(*options: str) -> tuple[subprocess.Popen, dict]:
    process = subprocess.Popen(  # noqa: S603
        [sys.executable, "-m", "tests.llm_fake", "--flavor", "openai", "--text", ANSWER, *options],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    return process, json.loads(process.stdout.readline())


def stop_fake(process: subprocess.Popen) -> dict:
    """Stop a fake; its closing report ({"requests": n, "delays": {question: seconds}})."""
    assert process.stdin is not None and process.stdout is not None
    process.stdin.close()
    report = process.stdout.readline()
    process.wait(timeout=10)
    return json.loads(report) if report.strip() else {}


def provider_ms(question: str) -> float:
    from tests.llm_fake import provider_delay

    return provider_delay(question, median=PROVIDER_MEDIAN, sigma=PROVIDER_SIGMA) * 1000


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


@dataclass
class Level:
    """What one level measured: per answered message its latency, its POST's latency and its question
    (ms, ms, text); how many chats stopped on an error; when the last socket opened (ms from the
    start)."""

    answered: list[tuple[float, float, str]] = field(default_factory=list)
    errors: int = 0
    first_error: str = ""
    sockets_open: float = 0.0
    # POSTs of the messages that open the rooms (not timed), ms
    openings: list[float] = field(default_factory=list)


def run_level(server: Server, widgets: list, level: int, messages: int = MESSAGES) -> Level:
    """`level` chats (chat i on widget i modulo their number), each sending messages one after the
    other until `messages` are answered in all; each chat's questions are its own, so each has its
    own provider delay. The chats are tasks of one event loop (aiohttp's client and websockets), so
    at 100 the client's own threads do not queue behind each other for the interpreter and what is
    measured is the server's time, not the benchmark's."""
    return asyncio.run(_run_level(server, widgets, level, messages))


async def _run_level(server: Server, widgets: list, level: int, messages: int) -> Level:
    per_chat = max(1, messages // level)
    result = Level()
    opened: list[float] = []
    started = time.perf_counter()
    timeout = aiohttp.ClientTimeout(total=30)
    # Every chat opens its room and has its first answer before any chat sends a timed message: the
    # timed POSTs measure chats in conversation, not a queue behind rooms being opened at once (the
    # openings' own POSTs are reported apart). A chat that stops on an error still counts as ready.
    ready, all_ready, waiting = 0, asyncio.Event(), set()

    def arrived() -> None:
        nonlocal ready
        ready += 1
        if ready == level:
            all_ready.set()

    async def chat_loop(http: aiohttp.ClientSession, sockets: aiohttp.ClientSession, widget) -> None:
        tag = uuid.uuid4().hex[:10]
        try:
            base = f"{server.base}/api/visitor/v1/{widget.button_guid}"
            async with http.post(f"{base}/sessions", json={}) as r:
                assert r.status == 201, await r.text()
                token = (await r.json())["session_token"]
            ws_url = f"{server.base.replace('http://', 'ws://')}/ws/visitor/{widget.button_guid}/?session={token}"
            async with sockets.ws_connect(ws_url, autoping=True) as ws:
                opened.append(time.perf_counter())
                await send(http, base, {"Authorization": f"Visitor {token}"}, ws, tag)
        except Exception as exc:  # noqa: BLE001 - reported below
            result.errors += 1
            result.first_error = result.first_error or repr(exc)
            if tag not in waiting:
                arrived()

    async def wait(ws, accept, timeout: float = 120) -> tuple[float, dict]:
        """Frames until a `message` frame whose message `accept` takes: when it arrived and the message."""
        deadline = time.monotonic() + timeout
        while True:
            received = await ws.receive(timeout=max(0.001, deadline - time.monotonic()))
            if received.type != aiohttp.WSMsgType.TEXT:
                raise ConnectionError(
                    f"the socket ended ({received.type.name}, close code {ws.close_code}, {ws.exception()!r})"
                )
            frame = json.loads(received.data)
            if frame.get("event") == "message" and accept(frame["message"]):
                return time.perf_counter(), frame["message"]

    async def send(http, base, headers, ws, tag: str) -> None:
        mark = 0
        for i in range(per_chat + 1):  # the first message opens the room (not timed)
            if i == 1:
                waiting.add(tag)
                arrived()
                await all_ready.wait()
                # Chats in conversation write at their own moments, not all in the same instant: each
                # visitor reads the first answer and writes again after a pause of up to FIRST_PAUSE.
                await asyncio.sleep(random.uniform(0, FIRST_PAUSE))  # noqa: S311 - not a secret
            question = f"Question {i} of chat {tag}: how long is delivery?"
            sent = time.perf_counter()
            body = {"type": "text", "body": question}
            async with http.post(f"{base}/messages", json=body, headers=headers) as r:
                assert r.status == 201, await r.text()
                stored = await r.json()
            posted = time.perf_counter()
            seen_at, answer = await wait(ws, is_answer(max(mark, stored["id"])))
            mark = answer["id"]
            if i > 0:
                result.answered.append(((seen_at - sent) * 1000, (posted - sent) * 1000, question))
            else:
                result.openings.append((posted - sent) * 1000)

    # One connection pool per chat, as each visitor's browser has its own. A browser opens a socket on
    # a connection of its own, never on one its requests kept alive: so does each chat here (the
    # server closes a socket upgraded on a kept-alive connection once the HTTP keep-alive timeout
    # passes, uvicorn's timer being left armed by the upgrade).
    sessions = [aiohttp.ClientSession(timeout=timeout) for _ in range(level)]
    sockets = [aiohttp.ClientSession() for _ in range(level)]
    try:
        await asyncio.gather(
            *(chat_loop(http, sockets[i], widgets[i % len(widgets)]) for i, http in enumerate(sessions))
        )
    finally:
        await asyncio.gather(*(http.close() for http in (*sessions, *sockets)))
    result.sockets_open = (max(opened) - started) * 1000 if len(opened) == level else float("inf")
    if result.errors:
        print(
            f"{NAME}.c{level}: {result.errors} chats stopped on an error, first: {result.first_error[:300]}", flush=True
        )
    return result


def floor_level(server: Server, fake: dict, widget, level: int) -> list[tuple[float, str]]:
    """The same number of round trips as `run_level`: an SDK completion, one message insert in its
    own transaction, and that message's push to the visitor's socket through the channel layer (the
    frame and the path the AI's answer takes), until the socket has it. Each its latency (ms) and
    its question."""
    from django.db import connection, transaction

    from apps.chats.models import Message
    from apps.chats.payloads import visitor_message_frame
    from apps.platform.realtime import chat_group, push
    from tests.llm_fake import sdk_floor_client, sdk_floor_completion

    per_chat = max(1, MESSAGES // min(level, FLOOR_THREADS))
    out: list[tuple[float, str]] = []
    lock = threading.Lock()

    def loop() -> None:
        tag = uuid.uuid4().hex[:10]
        client = sdk_floor_client(fake["base_url"], fake["api_key"], ca_file=fake["ca_path"])
        sdk_floor_completion(client, f"Warm-up of floor {tag}")
        try:
            http = session()
            with visitor(server, widget, http) as (base, headers, wait):
                # the room, and the AI's answer to its first message out of the way (not timed)
                r = http.post(f"{base}/messages", json={"type": "text", "body": f"Hello from {tag}"}, headers=headers)
                assert r.status_code == 201, r.text
                chat_id = r.json()["chat_id"]
                wait(is_answer(r.json()["id"]))
                for i in range(per_chat):
                    question = f"Question {i} of floor {tag}: how long is delivery?"
                    started = time.perf_counter()
                    text = sdk_floor_completion(client, question)
                    with transaction.atomic():
                        message = Message.objects.create(
                            widget_id=widget.pk, chat_id=chat_id, body=str(text), author_kind="ai"
                        )
                    frame = {"event": "message", "chat_id": chat_id, "message": visitor_message_frame(message)}
                    push([chat_group(chat_id)], frame)
                    seen_at, _ = wait(lambda m, pk=message.pk: m["id"] == pk)
                    with lock:
                        out.append(((seen_at - started) * 1000, question))
        finally:
            connection.close()

    threads = [threading.Thread(target=loop) for _ in range(min(level, FLOOR_THREADS))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


# --- CPU per answer -----------------------------------------------------------------------------------------


def _tree(pid: int) -> list[psutil.Process]:
    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.Error:
        return []


def _server_of(name: str, port: int) -> int | None:
    """The pid of the `name` server listening on `port` (None when this user cannot see it)."""
    for process in psutil.process_iter(["name"]):
        if process.info["name"] != name:
            continue
        try:
            if any(c.laddr.port == port and c.status == psutil.CONN_LISTEN for c in process.net_connections("tcp")):
                return process.pid
        except psutil.Error:
            continue
    return None


def cpu_seconds(roots: dict[str, int | None]) -> dict[str, float]:
    """The CPU seconds (user + system) each named process tree has used so far."""
    out = {}
    for name, pid in roots.items():
        if pid is None:
            continue
        total = 0.0
        for process in _tree(pid):
            try:
                times = process.cpu_times()
            except psutil.Error:
                continue
            total += times.user + times.system
        out[name] = total
    return out


def throughput(server: Server, widgets: list, roots: dict[str, int | None]) -> None:
    """Answers per second with a provider that answers at once, and each process's CPU per answer; the
    chats spread over several widgets, as a service's load is, so no widget's own cap on its AI
    answers at once (AI_WIDGET_SLOTS) is what is measured."""
    from bench.lib.targets import bench

    before, started = cpu_seconds(roots), time.perf_counter()
    level = run_level(server, widgets, THROUGHPUT_CHATS)
    wall, after = time.perf_counter() - started, cpu_seconds(roots)
    answers = len(level.answered)
    if not answers:
        print(f"BENCH {NAME}.throughput FAILED (no chat got an answer; {level.errors} stopped on errors)")
        return
    used = {name: after[name] - before[name] for name in after if name in before}
    per_answer = {name: round(seconds * 1000 / answers, 1) for name, seconds in used.items()}
    bench(
        f"{NAME}.throughput",
        unit="answers/s",
        target="errors==0",
        answers_per_s=round(answers / wall, 1),
        per_core=round(answers / max(sum(used.values()), 1e-9), 1),
        chats=THROUGHPUT_CHATS,
        n=answers,
        errors=level.errors,
        **{f"{name}_ms": value for name, value in per_answer.items()},
    )


def report(level: int, result: Level, floor: list[tuple[float, str]]) -> None:
    from bench.lib.targets import bench, info

    latencies = [latency for latency, _, _ in result.answered]
    posts = [post for _, post, _ in result.answered]
    added = [latency - provider_ms(question) for latency, _, question in result.answered]
    floor_added = [latency - provider_ms(question) for latency, question in floor]
    name = f"{NAME}.c{level}"
    # Every chat sends max(1, MESSAGES // level) timed messages: those not answered are lost.
    unanswered = max(1, MESSAGES // level) * level - len(latencies)
    bench(
        name,
        unit="ms",
        target=TARGETS.get(level, TARGETS[100]),
        added=round(percentile(added, 0.5), 1),
        added_p99=round(percentile(added, 0.99), 1),
        floor_added=round(percentile(floor_added, 0.5), 1),
        provider=round(percentile([provider_ms(q) for _, _, q in result.answered], 0.5), 1),
        ours=round(percentile(latencies, 0.5), 1),
        p99=round(percentile(latencies, 0.99), 1),
        post_p99=round(percentile(posts, 0.99), 1),
        sockets_open=round(result.sockets_open, 1),
        n=len(latencies),
        errors=result.errors,
        unanswered=unanswered,
    )
    after = [total - post for total, post in zip(latencies, posts, strict=True)]
    info(
        name,
        unit="ms",
        post_p50=round(percentile(posts, 0.5), 1),
        after_post_p50=round(percentile(after, 0.5), 1),
        after_post_p99=round(percentile(after, 0.99), 1),
        opening_post_p50=round(percentile(result.openings, 0.5), 1) if result.openings else None,
        opening_post_p99=round(percentile(result.openings, 0.99), 1) if result.openings else None,
    )


def main() -> int:
    problem = postgres_problem()
    if problem:
        skipped(NAME, problem)
        return 0
    if not os.environ.get("REDIS_URL"):
        skipped(NAME, "REDIS_URL is not set: the worker needs the broker the web process uses")
        return 0
    median = f"{PROVIDER_MEDIAN:g}"
    realistic_process, realistic = start_fake("--delay-median", median, "--delay-sigma", f"{PROVIDER_SIGMA:g}")
    instant_process, instant = start_fake()
    os.environ["OUTBOUND_ALLOW_LOOPBACK"] = "1"
    # Each fake process has a CA of its own: the web and worker processes trust both.
    bundle = ROOT / "var" / "bench" / f"{NAME}.ca.pem"
    bundle.parent.mkdir(parents=True, exist_ok=True)
    bundle.write_text("".join(Path(fake["ca_path"]).read_text() for fake in (realistic, instant)))
    os.environ["REQUESTS_CA_BUNDLE"] = str(bundle)
    from django.conf import settings
    from django.core.management import call_command

    call_command("migrate", verbosity=0, interactive=False)
    widget, fast_widgets = seed(realistic), [seed(instant) for _ in range(THROUGHPUT_WIDGETS)]
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
    asked: list[str] = []
    try:
        for entry, worker in workers.items():
            wait_ready(worker, logs[entry])
        with Server(NAME, workers=WEB_PROCESSES, env=env) as server:
            run_level(server, fast_widgets, 2, messages=10)  # warm up: connections, the worker's imports
            for level in LEVELS:
                result = run_level(server, [widget], level)
                if not result.answered:
                    print(f"BENCH {NAME}.c{level} FAILED (no chat got an answer; {result.errors} stopped on errors)")
                    continue
                floor = floor_level(server, realistic, widget, level)
                asked += [question for _, _, question in result.answered] + [question for _, question in floor]
                report(level, result, floor)
            database = settings.DATABASES["default"]
            roots = {
                "web": server.proc.pid if server.proc else None,
                "worker": workers["worker"].pid,
                "ai": workers["ai"].pid,
                "postgres": _server_of("postgres", int(database.get("PORT") or 5432)),
                "redis": _server_of("redis-server", urlsplit(os.environ["REDIS_URL"]).port or 6379),
            }
            throughput(server, fast_widgets, roots)
    finally:
        for worker in workers.values():
            stop(worker, group=True)
        stop_fake(instant_process)
        delays = stop_fake(realistic_process).get("delays", {})
        from apps.core.models import Widget

        Widget.objects.filter(pk__in=[widget.pk, *(w.pk for w in fast_widgets)]).delete()
    # Each measured answer's provider time was computed from its question: the fake must have waited
    # exactly that for that very question, or the `added` figures would be wrong.
    wrong = [q for q in asked if q not in delays or abs(delays[q] * 1000 - provider_ms(q)) > 0.01]
    if wrong:
        print(f"{NAME}: {len(wrong)} of {len(asked)} questions reached the provider otherwise, e.g. {wrong[0]!r}")
        return 1
    return 0


if __name__ == "__main__":
    from bench.lib.env import setup_django

    setup_django()
    sys.exit(main())
