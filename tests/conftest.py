"""Fixtures for tests of the real processes (tests/live.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.live import Process, Template, WebServer, environment, start_web


@pytest.fixture(scope="session")
def live_template(tmp_path_factory) -> Template:
    return Template.build(tmp_path_factory.mktemp("live-template"))


@pytest.fixture
def live_var(live_template, tmp_path) -> Path:
    """A fresh copy of the migrated, seeded VAR_DIR for this test's processes."""
    return live_template.copy(tmp_path)


@pytest.fixture
def start_server(live_template, live_var, tmp_path):
    """start_server(**env) -> WebServer: the Procfile's `web` on a free loopback port, on this test's
    VAR_DIR (so two servers of one test share database and cache); stopped after the test."""
    started: list[WebServer] = []

    def start(**env: str) -> WebServer:
        log = tmp_path / f"web-{len(started)}.log"
        server = start_web(live_var, live_template.seed, log, **env)
        started.append(server)
        return server

    yield start
    for server in started:
        server.terminate()


@pytest.fixture
def start_process(live_var, tmp_path):
    """start_process(name, **env) -> Process: a Procfile entry (`worker`, `beat`) on this test's VAR_DIR."""
    started: list[Process] = []

    def start(name: str, **env: str) -> Process:
        process = Process.start(name, environment(live_var, **env), tmp_path / f"{name}-{len(started)}.log")
        started.append(process)
        return process

    yield start
    for process in started:
        process.terminate(timeout=5)
