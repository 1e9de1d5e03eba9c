"""The real web process (the Procfile's `web`: uvicorn serving config.asgi:application) on a free
loopback port and the embedded default, for the transport tests (tests/live.py starts it); and what
those tests need of it: tokens of chosen scopes, a visitor's chat, the official MCP client."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx2
import requests
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.live import ROOT, Process, Template, WebServer, environment, free_port

# A loaded machine (two cores shared by several test runs) takes minutes to migrate a new database.
MANAGE_TIMEOUT = 900


def manage(var_dir: Path, *args: str) -> str:
    """`manage.py` on the embedded default in `var_dir` (tests.live.manage, with a loaded machine's time)."""
    done = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=environment(var_dir),
        capture_output=True,
        text=True,
        timeout=MANAGE_TIMEOUT,
    )
    if done.returncode != 0:
        raise RuntimeError(f"manage.py {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}")
    return done.stdout


def build_template(where: Path) -> Template:
    """A migrated VAR_DIR with the demo widget (as tests.live.Template.build)."""
    var_dir = where / "var"
    var_dir.mkdir(parents=True)
    manage(var_dir, "migrate", "--noinput")
    return Template(var_dir=var_dir, seed=json.loads(manage(var_dir, "seed_demo")))


def start_web(var_dir: Path, seed: dict, log: Path, **env: str) -> WebServer:
    """The Procfile's `web` on a free loopback port (as tests.live.start_web, with a loaded machine's time)."""
    port = free_port()
    process = Process.start("web", environment(var_dir, PORT=str(port), **env), log)
    server = WebServer(name="web", proc=process.proc, log=log, port=port, seed=seed)
    try:
        server.wait_until_up(timeout=MANAGE_TIMEOUT)
    except BaseException:
        server.terminate()
        raise
    return server


ISSUE = (
    "import json; from apps.core import services; from apps.core.models import Widget; "
    "w = Widget.objects.get(button_guid='{guid}'); "
    "print(json.dumps({{name: services.issue_token(widget=w, scopes=scopes).plaintext "
    "for name, scopes in {wanted!r}.items()}}))"
)


def create_widget(var_dir: Path) -> dict:
    """Another widget (another tenant) in the same database: its ids (`manage.py create_widget`)."""
    return json.loads(manage(var_dir, "create_widget", "--owner-email", "other@example.com", "--enable-api"))


def issue_tokens(var_dir: Path, guid: str, wanted: dict[str, list[str]]) -> dict[str, str]:
    """Tokens of the widget `guid` with the scopes asked for, issued in one `manage.py shell`."""
    out = manage(var_dir, "shell", "-c", ISSUE.format(guid=guid, wanted=wanted))
    return json.loads(out.strip().splitlines()[-1])


@dataclass
class Live:
    server: WebServer
    var_dir: Path
    tokens: dict[str, str]

    @property
    def url(self) -> str:
        return self.server.url("/mcp")

    def rest(self, method: str, path: str, token: str = "full", **kwargs) -> requests.Response:
        headers = {"Authorization": f"Bearer {self.tokens[token]}", **kwargs.pop("headers", {})}
        return requests.request(method, self.server.url(path), headers=headers, timeout=30, **kwargs)

    def new_chat(self, text: str = "Hello, is anyone there?", *, guid: str | None = None) -> int:
        """A visitor writes to the demo widget (or the widget `guid`): the id of the chat it opens."""
        guid = guid or self.server.seed["button_guid"]
        session = requests.post(self.server.url(f"/api/visitor/v1/{guid}/sessions"), json={}, timeout=30)
        assert session.status_code == 201, session.text
        visitor = session.json()["session_token"]
        answer = requests.post(
            self.server.url(f"/api/visitor/v1/{guid}/messages"),
            json={"type": "text", "body": text},
            headers={"Authorization": f"Visitor {visitor}"},
            timeout=30,
        )
        assert answer.status_code in (200, 201, 202), answer.text
        return int(answer.json()["chat_id"])

    @asynccontextmanager
    async def client(
        self, token: str = "full", *, mode: str = "legacy", credential: str | None = None
    ) -> AsyncIterator[Client]:
        """The official client over Streamable HTTP as the token named `token` (or `credential`)."""
        secret = credential if credential is not None else self.tokens[token]
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {secret}"}, timeout=60) as http:
            async with Client(streamable_http_client(self.url, http_client=http), mode=mode) as client:
                yield client
