"""The Celery worker and beat as `make run` starts them (the Procfile's lines): stopping."""

from __future__ import annotations

import threading

import pytest
import requests

pytestmark = pytest.mark.django_db  # the plugin's autouse fixtures want the test database

# make run's honcho kills whatever has not exited 10 s after its SIGTERM (scripts/run.sh raises
# honcho's 5 s: a prefork worker's warm shutdown takes 4-5 s on two quiet cores, each of Celery's
# and billiard's stop steps polling once a second).
HONCHO_KILL_SECONDS = 10


@pytest.mark.parametrize("group", [True, False], ids=["honcho-group", "worker-alone"])
def test_the_worker_exits_within_seconds_of_sigterm_while_tasks_arrive(start_server, start_process, group):
    # given web and worker as the Procfile starts them, and visitors whose messages keep the worker
    # busy (each one is a fan-out task) while it is stopped
    env = {"VISITOR_SESSIONS_PER_ADDRESS_PER_HOUR": "0", "VISITOR_MESSAGES_PER_ADDRESS_PER_MINUTE": "0"}
    server = start_server(**env)
    worker = start_process("worker", **env)
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

        # when it gets SIGTERM (to its process group, as from honcho, or alone)
        seconds = worker.terminate(timeout=30, group=group)
    finally:
        stop.set()
        talker.join()

    # then its warm shutdown finishes well before honcho would kill it
    assert worker.proc.returncode == 0, worker.output()[-2000:]
    assert seconds < HONCHO_KILL_SECONDS - 2, f"{seconds:.1f} s"


def test_beat_exits_within_seconds_of_sigterm(start_process):
    beat = start_process("beat")
    beat.wait_for_output("beat: Starting")
    # The scheduler writes the schedule into its tables right after starting; a SIGTERM inside that
    # write can be swallowed (beat then runs until honcho's kill). Stop it once it has settled, as an
    # operator does; the start-up window is a known limit (docs/operating/deployment.md).
    beat.wait_for_output("Schedule changed")
    seconds = beat.terminate(timeout=30, group=False)
    assert seconds < HONCHO_KILL_SECONDS - 2, f"{seconds:.1f} s"
