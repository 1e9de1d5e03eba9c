"""The embedded default as `make run` runs it: the Procfile's processes under supervisord
(scripts/supervisor_conf.py), SQLite, the file cache and the SQLite broker, in a directory of their
own. What workers write reaches the web process's sockets live, every process reads the same operator
presence, a burst leaves every process alive, a killed process comes back while the web keeps
answering, and Ctrl-C stops everything.

One stack serves the module's tests, in order (starting it takes a while); waits poll with a
deadline, nothing sleeps for a fixed time to let something happen.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import requests

from tests.live import ROOT, Template, environment, free_port, read_proc
from tests.llm_fake import FakeLLM, ca_path, server_error

pytestmark = pytest.mark.embedded

ANSWER = "Our tea ships in two days."
PROGRAMS = ("web", "worker", "ai", "bulk", "beat")


def _run(var_dir: Path, env: dict[str, str], code: str) -> str:
    done = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", textwrap.dedent(code)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout.strip().splitlines()[-1]


class Stack:
    """supervisord running the Procfile on a VAR_DIR of its own."""

    def __init__(self, where: Path, template: Template, fake: FakeLLM) -> None:
        self.var_dir = template.copy(where)
        self.seed = template.seed
        self.port = free_port()
        self.env = environment(
            self.var_dir,
            PORT=str(self.port),
            OUTBOUND_ALLOW_LOOPBACK="1",
            REQUESTS_CA_BUNDLE=ca_path(),
            VISITOR_SESSIONS_PER_ADDRESS_PER_HOUR="0",
            VISITOR_MESSAGES_PER_ADDRESS_PER_MINUTE="0",
            # the burst is 600 messages of one widget within a minute: its own budget is off too
            VISITOR_WIDGET_BUDGET_SCALE="0",
        )
        run_dir = self.var_dir / "run"
        run_dir.mkdir()
        conf = run_dir / "supervisord.conf"
        conf.write_text(
            subprocess.run(
                [sys.executable, "scripts/supervisor_conf.py", "Procfile", str(run_dir)],
                cwd=ROOT,
                check=True,
                capture_output=True,
                text=True,
            ).stdout
        )
        self.log = where / "stack.log"
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen(
                [str(ROOT / ".venv" / "bin" / "supervisord"), "--nodaemon", "--configuration", str(conf)],
                cwd=ROOT,
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def shell(self, code: str) -> str:
        return _run(self.var_dir, self.env, code)

    def pids(self) -> dict[str, int]:
        """The running program of each Procfile entry: its pid (supervisord's direct children)."""
        found = {}
        if self.proc.poll() is not None:
            return found
        for task in Path(f"/proc/{self.proc.pid}/task").iterdir():
            for child in read_proc(task / "children").split():
                cmdline = read_proc(Path(f"/proc/{child}/cmdline")).replace("\0", " ")
                if "web.sh" in cmdline or "uvicorn" in cmdline:
                    found["web"] = int(child)
                elif " beat " in cmdline:
                    found["beat"] = int(child)
                elif "-Q ai" in cmdline:
                    found["ai"] = int(child)
                elif "-Q bulk" in cmdline:
                    found["bulk"] = int(child)
                elif " worker " in cmdline:
                    found["worker"] = int(child)
        return found

    def wait_ready(self, timeout: float = 180) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, self.output()[-4000:]
            text = self.output()
            try:
                up = requests.get(self.base + "/healthz", timeout=5).status_code == 200
            except requests.RequestException:
                up = False
            if (
                up
                and "ai@" in text
                and "bulk@" in text
                and text.count(" ready.") >= 3
                and set(self.pids()) == set(PROGRAMS)
            ):
                return
            time.sleep(0.5)
        raise AssertionError(f"the stack did not get ready in {timeout} s:\n{self.output()[-4000:]}")

    def stop(self) -> float:
        """SIGINT, as Ctrl-C in make run's terminal; the seconds until supervisord exited."""
        started = time.monotonic()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        return time.monotonic() - started


@pytest.fixture(scope="module")
def fake():
    with FakeLLM("openai", text=ANSWER) as running:
        yield running


@pytest.fixture(scope="module")
def stack(tmp_path_factory, fake):
    template = Template.build(tmp_path_factory.mktemp("embedded-template"))
    running = Stack(tmp_path_factory.mktemp("embedded-stack"), template, fake)
    try:
        running.wait_ready()
        yield running
    finally:
        pids = running.pids() if running.proc.poll() is None else {}
        running.stop()
        for pid in pids.values():  # nothing may outlive the module
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


@pytest.fixture(scope="module")
def ai_widget(stack, fake):
    """The demo widget with the AI operator on, answering through the fake; the owner's console
    session (the operator presence comes from an open console socket)."""
    out = stack.shell(f"""
        import json
        from django.conf import settings
        from django.contrib import auth
        from importlib import import_module
        from apps.ai.models import AiSettings
        from apps.ai.tests.factories import AiOperatorFactory, AssistantFactory, CredentialFactory
        from apps.core.models import Widget
        widget = Widget.objects.get(pk={stack.seed["widget_id"]})
        AiSettings.objects.create(widget=widget, enabled=True)
        assistant = AssistantFactory(widget=widget, is_default=True, system_prompt="You sell tea.")
        AiOperatorFactory(assistant=assistant)
        CredentialFactory(widget=widget, api_key={fake.api_key!r}, base_url={fake.base_url!r})
        user = widget.account.user
        store = import_module(settings.SESSION_ENGINE).SessionStore()
        store[auth.SESSION_KEY] = str(user.pk)
        store[auth.BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
        store[auth.HASH_SESSION_KEY] = user.get_session_auth_hash()
        store.create()
        print(json.dumps({{"session": store.session_key, "cookie": settings.SESSION_COOKIE_NAME}}))
    """)
    return json.loads(out)


def _visitor(stack) -> str:
    response = requests.post(f"{stack.base}/api/visitor/v1/{stack.seed['button_guid']}/sessions", json={}, timeout=10)
    assert response.status_code == 201, response.text
    return response.json()["session_token"]


def _post(stack, visitor: str, body: str) -> requests.Response:
    return requests.post(
        f"{stack.base}/api/visitor/v1/{stack.seed['button_guid']}/messages",
        json={"type": "text", "body": body},
        headers={"Authorization": f"Visitor {visitor}"},
        timeout=30,
    )


async def _frame_with(socket_, predicate, timeout: float = 60) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise AssertionError("no such frame arrived on the socket")
        frame = json.loads(await asyncio.wait_for(socket_.recv(), remaining))
        if predicate(frame):
            return frame


def _ai_message(text_part: str):
    def match(frame: dict) -> bool:
        message = frame.get("message") or {}
        return frame.get("event") == "message" and text_part in (message.get("body") or "")

    return match


def test_an_ai_answer_written_by_the_ai_worker_reaches_the_visitor_socket_live(stack, ai_widget):
    import websockets

    visitor = _visitor(stack)

    async def exchange() -> dict:
        uri = f"ws://127.0.0.1:{stack.port}/ws/visitor/{stack.seed['button_guid']}/?session={visitor}"
        async with websockets.connect(uri, open_timeout=10) as socket_:
            posted = await asyncio.to_thread(_post, stack, visitor, "How fast do you ship?")
            assert posted.status_code == 201, posted.text
            return await _frame_with(socket_, _ai_message(ANSWER))

    frame = asyncio.run(exchange())
    assert frame["message"]["author"]["kind"] != "client"


def test_the_ai_hands_over_to_an_operator_whose_console_socket_is_open(stack, ai_widget, fake):
    import websockets

    from apps.ai import phrases

    visitor = _visitor(stack)

    async def exchange() -> dict:
        operator_uri = f"ws://127.0.0.1:{stack.port}/ws/agent/?widget={stack.seed['widget_id']}"
        headers = {"Cookie": f"{ai_widget['cookie']}={ai_widget['session']}", "Origin": stack.base}
        async with websockets.connect(operator_uri, additional_headers=headers, open_timeout=10) as operator:
            ready = json.loads(await asyncio.wait_for(operator.recv(), 10))
            assert ready["event"] == "ready", ready
            uri = f"ws://127.0.0.1:{stack.port}/ws/visitor/{stack.seed['button_guid']}/?session={visitor}"
            async with websockets.connect(uri, open_timeout=10) as socket_:
                # the provider fails on every attempt: the AI hands the chat to people
                fake.script(*[server_error(500)] * 10)
                posted = await asyncio.to_thread(_post, stack, visitor, "Are you a robot?")
                assert posted.status_code == 201, posted.text

                def not_from_visitor(frame: dict) -> bool:
                    message = frame.get("message") or {}
                    return frame.get("event") == "message" and message.get("author", {}).get("kind") != "client"

                return await _frame_with(socket_, not_from_visitor)

    frame = asyncio.run(exchange())
    # the ai worker read the operator online (the console socket lives in the web process)
    assert frame["message"]["body"] in phrases.DEFAULTS["handoff_to_human"].values()
    assert frame["message"]["body"] not in phrases.DEFAULTS["handover_offline"].values()


def test_a_burst_of_visitor_messages_leaves_every_process_alive(stack):
    before = stack.pids()
    visitors = [_visitor(stack) for _ in range(30)]

    def write(visitor: str) -> list[int]:
        return [_post(stack, visitor, f"burst {n}").status_code for n in range(20)]

    with ThreadPoolExecutor(max_workers=10) as pool:
        statuses = [status for batch in pool.map(write, visitors) for status in batch]

    assert len(statuses) == 600 and set(statuses) == {201}
    assert requests.get(stack.base + "/healthz", timeout=10).status_code == 200
    assert stack.pids() == before  # nothing died and was restarted meanwhile


@pytest.mark.parametrize("program", ["worker", "ai", "bulk"])
def test_a_killed_worker_comes_back_and_the_web_never_stops_answering(stack, program):
    old = stack.pids()[program]
    web = stack.pids()["web"]
    os.killpg(old, signal.SIGKILL)
    deadline = time.monotonic() + 120
    answers = []
    while time.monotonic() < deadline:
        answers.append(requests.get(stack.base + "/healthz", timeout=10).status_code)
        new = stack.pids().get(program)
        if new and new != old and " ready." in stack.output().split(f"spawned: '{program}' with pid {new}")[-1]:
            break
        time.sleep(0.5)
    else:
        raise AssertionError(f"{program} did not come back:\n{stack.output()[-3000:]}")
    assert set(answers) == {200}
    assert stack.pids()["web"] == web


def test_ctrl_c_stops_every_process_within_15_seconds(stack):
    pids = stack.pids()
    seconds = stack.stop()
    assert seconds < 15, stack.output()[-3000:]
    for pid in pids.values():
        stat = read_proc(Path(f"/proc/{pid}/stat"))
        assert not stat or stat.rsplit(")", 1)[1].split()[0] == "Z"
