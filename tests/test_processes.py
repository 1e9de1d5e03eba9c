"""The Celery worker and beat as `make run` starts them (the Procfile's lines): stopping."""

from __future__ import annotations

import importlib.util
import threading
from pathlib import Path

import pytest
import requests

pytestmark = [pytest.mark.embedded, pytest.mark.django_db]  # django_db: the plugin's autouse fixtures want it

_spec = importlib.util.spec_from_file_location(
    "supervisor_conf", Path(__file__).resolve().parents[1] / "scripts" / "supervisor_conf.py"
)
_supervisor_conf = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_supervisor_conf)
# make run's supervisord kills whatever has not exited this long after its SIGTERM.
SUPERVISOR_KILL_SECONDS = _supervisor_conf.STOP_WAIT_SECONDS
# Celery's per-task and beat's start-up lines, which these tests wait for, are logged at DEBUG only.
VERBOSE = {"LOG_LEVEL": "DEBUG"}


@pytest.mark.parametrize("group", [True, False], ids=["process-group", "worker-alone"])
def test_the_worker_exits_within_seconds_of_sigterm_while_tasks_arrive(start_server, start_process, group):
    # given web and worker as the Procfile starts them, and visitors whose messages keep the worker
    # busy (each one is a fan-out task) while it is stopped
    env = {"VISITOR_SESSIONS_PER_ADDRESS_PER_HOUR": "0", "VISITOR_MESSAGES_PER_ADDRESS_PER_MINUTE": "0"}
    server = start_server(**env)
    worker = start_process("worker", **env, **VERBOSE)
    worker.wait_for_output(" ready.")
    token = server.visitor_session()
    stop = threading.Event()

    def visitor_talks():
        while not stop.is_set():
            requests.post(
                server.url(f"/api/visitor/v1/{server.seed['button_guid']}/messages"),
                json={"type": "text", "body": "Hello?"},
                headers={"Authorization": f"Visitor {token}"},
                timeout=10,
            )
            stop.wait(0.05)

    talker = threading.Thread(target=visitor_talks)
    talker.start()
    try:
        worker.wait_for_output("succeeded")

        # when it gets SIGTERM (to its process group, as from supervisord, or alone)
        seconds = worker.terminate(timeout=30, group=group)
    finally:
        stop.set()
        talker.join()

    # then its warm shutdown finishes before supervisord would kill it
    assert worker.proc.returncode == 0, worker.output()[-2000:]
    assert seconds < SUPERVISOR_KILL_SECONDS, f"{seconds:.1f} s"


def test_beat_exits_within_seconds_of_sigterm(start_process):
    beat = start_process("beat", **VERBOSE)
    beat.wait_for_output("beat: Starting")
    # The scheduler writes the schedule into its tables right after starting; a SIGTERM inside that
    # write can be swallowed (beat then runs until supervisord's kill). Stop it once it has settled, as an
    # operator does; the start-up window is a known limit (docs/operating/deployment.md).
    beat.wait_for_output("Schedule changed")
    seconds = beat.terminate(timeout=30, group=False)
    assert seconds < SUPERVISOR_KILL_SECONDS, f"{seconds:.1f} s"
