"""A worker's own metrics port (apps.platform.metrics_server, METRICS_PORT): the web's access rule and
problems, the counts of every process of its folder, no readings, and nothing served unless set."""

from __future__ import annotations

import io
import json
import logging
import socket
import subprocess
import sys
import threading
from pathlib import Path
from wsgiref.util import setup_testing_defaults

import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

from apps.platform import metrics, metrics_server
from config.celery import serve_metrics

pytestmark = pytest.mark.django_db  # the web's /metrics, compared with, runs its middleware

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "metrics-token-0123456789"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def port():
    """The port served on a free loopback port; stopped after the test."""
    server = metrics_server.serve(0, "127.0.0.1")
    assert server is not None
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def get(port: int, path: str = "/metrics", **headers: str) -> requests.Response:
    return requests.get(f"http://127.0.0.1:{port}{path}", headers=headers, timeout=10)


def families(response: requests.Response) -> dict:
    assert response.status_code == 200, response.text[:500]
    assert response.headers["Content-Type"].startswith("text/plain; version=")
    return {family.name: family for family in text_string_to_metric_families(response.text)}


def value(found: dict, name: str, **labels: str) -> float:
    family = found.get(name.removesuffix("_total").removesuffix("_count"))
    samples = [
        s.value
        for s in (family.samples if family else [])
        if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())
    ]
    assert len(samples) == 1, (name, labels, samples)
    return samples[0]


def call(environ_overrides: dict[str, str]) -> tuple[str, dict[str, str], bytes]:
    """The port's WSGI application called as its server would, from any address."""
    environ: dict = {"wsgi.input": io.BytesIO()}
    setup_testing_defaults(environ)
    environ.update(PATH_INFO="/metrics", **environ_overrides)
    answered = {}

    def start_response(status, headers):
        answered.update(status=status, headers=dict(headers))

    body = b"".join(metrics_server.application(environ, start_response))
    return answered["status"], answered["headers"], body


# --- who may read -----------------------------------------------------------------------------------------


def test_with_a_token_set_only_its_bearer_is_answered_and_refusals_are_the_webs(port, client, settings):
    settings.METRICS_TOKEN = TOKEN
    for sent in ({}, {"Authorization": "Bearer wrong-token"}, {"Authorization": f"Basic {TOKEN}"}):
        refused = get(port, **sent)
        web = client.get("/metrics", **{f"HTTP_{k.upper()}": v for k, v in sent.items()})
        assert refused.status_code == web.status_code == 401, sent
        assert refused.headers["Content-Type"] == web["Content-Type"] == "application/problem+json"
        assert refused.headers["WWW-Authenticate"] == web["WWW-Authenticate"] == 'Bearer realm="metrics"'
        assert refused.json() == json.loads(web.content)
    found = families(get(port, Authorization=f"Bearer {TOKEN}"))
    assert "chatwidget_delivery_attempts" in found


def test_without_a_token_loopback_is_answered_and_another_address_refused_as_the_web_does(port, client, settings):
    settings.METRICS_TOKEN = ""
    assert "chatwidget_ai_provider_errors" in families(get(port))
    status, headers, body = call({"REMOTE_ADDR": "203.0.113.7", "HTTP_AUTHORIZATION": f"Bearer {TOKEN}"})
    web = client.get("/metrics", REMOTE_ADDR="203.0.113.7", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert status == "403 Forbidden" and web.status_code == 403
    assert headers["Content-Type"] == "application/problem+json"
    assert json.loads(body) == json.loads(web.content)
    assert call({"REMOTE_ADDR": "::1"})[0] == "200 OK"


def test_other_paths_and_methods_are_problems(port, settings):
    settings.METRICS_TOKEN = TOKEN
    missing = get(port, "/", Authorization=f"Bearer {TOKEN}")
    assert missing.status_code == 404 and missing.json()["code"] == "not_found"
    assert missing.json()["instance"] == "/"
    posted = requests.post(f"http://127.0.0.1:{port}/metrics", timeout=10)
    assert posted.status_code == 405 and posted.headers["Allow"] == "GET"
    assert posted.json()["code"] == "method_not_allowed"
    assert posted.headers["Content-Type"] == "application/problem+json"


# --- what it answers --------------------------------------------------------------------------------------

POOL_PROCESS = """
from apps.platform import metrics

metrics.count_delivery_attempts("webhook", ["delivered", "pending", "gone"])
metrics.count_provider_error(driver="anthropic", kind="rate_limited")
metrics.observe_ai_answer(outcome="handed_off", seconds=2.5)
"""


def test_the_counts_of_the_workers_processes_are_summed_and_the_readings_left_to_the_web(port, settings):
    # given a pool process of this worker (the same folder) that delivered, retried, met a provider
    # error and handed a chat off, then ended
    settings.METRICS_TOKEN = ""
    before = families(get(port))
    subprocess.run([sys.executable, "-c", POOL_PROCESS], cwd=ROOT, check=True, timeout=60)
    # then the port sums its counts into this process's
    after = families(get(port))
    for name, labels in (
        ("chatwidget_delivery_attempts_total", {"kind": "webhook", "outcome": "delivered"}),
        ("chatwidget_delivery_attempts_total", {"kind": "webhook", "outcome": "retrying"}),
        ("chatwidget_ai_provider_errors_total", {"driver": "anthropic", "kind": "rate_limited"}),
        ("chatwidget_ai_answer_duration_seconds_count", {"outcome": "handed_off"}),
    ):
        assert value(after, name, **labels) == value(before, name, **labels) + 1, (name, labels)
    failed = {"kind": "webhook", "outcome": "failed"}
    assert value(after, "chatwidget_delivery_attempts_total", **failed) == value(
        before, "chatwidget_delivery_attempts_total", **failed
    )
    # and the database's and the broker's readings are the web's alone
    for reading in ("chatwidget_celery_queue_length", "chatwidget_deliveries_pending", "chatwidget_metrics_source_up"):
        assert reading not in after
    web = {family.name for family in text_string_to_metric_families(metrics.exposition().decode())}
    assert {"chatwidget_celery_queue_length", "chatwidget_metrics_source_up"} <= web


# --- when it is served ------------------------------------------------------------------------------------


def test_a_worker_serves_nothing_unless_metrics_port_is_set(settings):
    settings.METRICS_PORT = 0
    threads = set(threading.enumerate())
    assert serve_metrics() is None
    assert not [t for t in set(threading.enumerate()) - threads if t.name == "metrics-port"]

    settings.METRICS_PORT = free_port()
    settings.METRICS_TOKEN = TOKEN
    server = serve_metrics()
    try:
        assert server.server_address == ("0.0.0.0", settings.METRICS_PORT)
        assert get(settings.METRICS_PORT).status_code == 401
        assert "chatwidget_delivery_attempts" in families(get(settings.METRICS_PORT, Authorization=f"Bearer {TOKEN}"))
    finally:
        server.shutdown()
        server.server_close()


def test_a_port_already_taken_leaves_the_worker_without_metrics_and_says_so(caplog):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        with caplog.at_level(logging.ERROR, logger="apps.platform.metrics_server"):
            assert metrics_server.serve(taken.getsockname()[1], "127.0.0.1") is None
    assert "cannot listen" in caplog.text


@pytest.mark.embedded
def test_the_procfiles_worker_serves_its_folder_on_metrics_port(start_process):
    # given the Procfile's worker with METRICS_PORT and METRICS_TOKEN, as the image starts it
    port = free_port()
    worker = start_process("worker", METRICS_PORT=str(port), METRICS_TOKEN=TOKEN)
    worker.wait_for_output("metrics port: GET /metrics on 0.0.0.0:")
    assert get(port).status_code == 401
    before = families(get(port, Authorization=f"Bearer {TOKEN}"))
    # when a process of its folder counts a provider error
    subprocess.run([sys.executable, "-c", POOL_PROCESS], cwd=ROOT, check=True, timeout=60)
    # then the worker's port answers it
    after = families(get(port, Authorization=f"Bearer {TOKEN}"))
    labels = {"driver": "anthropic", "kind": "rate_limited"}
    assert value(after, "chatwidget_ai_provider_errors_total", **labels) == (
        value(before, "chatwidget_ai_provider_errors_total", **labels) + 1
    )
