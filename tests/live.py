"""The service's processes started exactly as `make run` starts them (the Procfile's lines), on a
free loopback port and the embedded default (SQLite, file cache, filesystem broker) in a directory
of their own, for tests whose subject lives in the server: uvicorn's HTTP and websocket protocol,
its logs, Celery's worker and beat.

A session-wide template directory is migrated and seeded once (`manage.py seed_demo`); every
process group gets a copy of it, so tests do not share rate-limit rows or caches.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parents[1]
VENV_BIN = ROOT / ".venv" / "bin"
# Whatever the suite runs on, these processes use the embedded default in their own VAR_DIR.
_DROPPED_ENV = {"DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE", "APP_MODE", "DEBUG", "VAR_DIR", "PORT"}


def read_proc(path: Path) -> str:
    """A /proc file's text, or "" when its process has ended (it can end between being listed and
    being read, such as a killed program its supervisor has just reaped)."""
    try:
        return path.read_bytes().decode(errors="replace")
    except (FileNotFoundError, ProcessLookupError):
        return ""


def procfile(name: str) -> str:
    """The command of one Procfile entry (`web`, `worker`, `beat`)."""
    for line in (ROOT / "Procfile").read_text().splitlines():
        key, _, command = line.partition(":")
        if key.strip() == name:
            return command.strip()
    raise KeyError(name)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def environment(var_dir: Path, **overrides: str) -> dict[str, str]:
    """What `make run` gives the Procfile's processes: the venv first on PATH, the development mode."""
    env = {key: value for key, value in os.environ.items() if key not in _DROPPED_ENV}
    env.update(
        PATH=f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}",
        VAR_DIR=str(var_dir),
        PYTHONUNBUFFERED="1",
        # Test processes must not mail anyone or reach the network.
        EMAIL_URL="consolemail://",
        **overrides,
    )
    return env


def manage(var_dir: Path, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=environment(var_dir),
        capture_output=True,
        text=True,
        timeout=120,
    )
    if done.returncode != 0:
        raise RuntimeError(f"manage.py {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}")
    return done.stdout


@dataclass
class Template:
    """A migrated, seeded VAR_DIR (copied for each process group)."""

    var_dir: Path
    seed: dict

    @classmethod
    def build(cls, where: Path) -> Template:
        var_dir = where / "var"
        var_dir.mkdir(parents=True)
        manage(var_dir, "migrate", "--noinput")
        seed = json.loads(manage(var_dir, "seed_demo"))
        return cls(var_dir=var_dir, seed=seed)

    def copy(self, where: Path) -> Path:
        target = where / "var"
        shutil.copytree(self.var_dir, target)
        return target


@dataclass
class Process:
    """One Procfile entry in its own process group (`sh -c "exec <command>"`: the pid is the process)."""

    name: str
    proc: subprocess.Popen
    log: Path

    @classmethod
    def start(cls, name: str, env: dict[str, str], log: Path) -> Process:
        with log.open("wb") as out:  # the child keeps its own descriptor
            proc = subprocess.Popen(
                ["sh", "-c", f"exec {procfile(name)}"],
                cwd=ROOT,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        return cls(name=name, proc=proc, log=log)

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def alive(self) -> bool:
        return self.proc.poll() is None

    def rss_kib(self) -> int:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        raise RuntimeError("no VmRSS")

    def wait_for_output(self, needle: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if needle in self.output():
                return
            if not self.alive():
                raise AssertionError(f"{self.name} exited ({self.proc.returncode}):\n{self.output()[-3000:]}")
            time.sleep(0.1)
        raise AssertionError(f"{self.name} did not print {needle!r} in {timeout} s:\n{self.output()[-3000:]}")

    def terminate(self, timeout: float = 15, *, group: bool = True) -> float:
        """SIGTERM to the process group (as honcho stops `make run`) or to the process alone
        (`kill <pid>` of a standalone worker); the seconds until the process exited (SIGKILL after `timeout`)."""
        started = time.monotonic()
        if self.alive():
            if group:
                os.killpg(self.proc.pid, signal.SIGTERM)
            else:
                self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        else:
            return 0.0
        # Pool children of a worker are in the same group: nothing may outlive the test.
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        return time.monotonic() - started


@dataclass
class WebServer(Process):
    port: int = 0
    seed: dict = field(default_factory=dict)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws_base(self) -> str:
        return f"ws://127.0.0.1:{self.port}"

    def url(self, path: str) -> str:
        return self.base + path

    def wait_until_up(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.alive():
                raise AssertionError(f"the server exited ({self.proc.returncode}):\n{self.output()[-3000:]}")
            try:
                if requests.get(self.url("/healthz"), timeout=5).status_code == 200:
                    return
            except (requests.ConnectionError, requests.Timeout):  # a slow first answer under load: ask again
                pass
            time.sleep(0.2)
        raise AssertionError(f"the server did not answer /healthz in {timeout} s:\n{self.output()[-3000:]}")

    def visitor_session(self, **body) -> str:
        """A new visitor session of the seeded widget: its token."""
        response = requests.post(
            self.url(f"/api/visitor/v1/{self.seed['button_guid']}/sessions"), json=body, timeout=10
        )
        assert response.status_code == 201, response.text
        return response.json()["session_token"]


def start_web(var_dir: Path, seed: dict, log: Path, **env: str) -> WebServer:
    port = free_port()
    process = Process.start("web", environment(var_dir, PORT=str(port), **env), log)
    server = WebServer(name="web", proc=process.proc, log=log, port=port, seed=seed)
    try:
        server.wait_until_up()
    except BaseException:
        server.terminate()
        raise
    return server
