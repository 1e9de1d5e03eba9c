"""Settings modes, health check, structured logs with request id."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GOOD_SECRET = "k3J9-vQ2_pX7zL4mN8wR1tY6uB0cE5hG" * 2


def run_check(env_overrides, *args):
    env = {k: v for k, v in os.environ.items() if k not in ("DEBUG", "SECRET_KEY", "APP_MODE")}
    env.update({"DJANGO_SETTINGS_MODULE": "config.settings", **env_overrides})
    return subprocess.run(
        [sys.executable, "manage.py", "check", *args], cwd=ROOT, env=env, capture_output=True, text=True
    )


def test_production_refuses_debug():
    result = run_check({"APP_MODE": "production", "DEBUG": "1", "SECRET_KEY": GOOD_SECRET})
    assert result.returncode != 0 and "DEBUG" in result.stderr


def test_production_refuses_the_default_secret():
    result = run_check({"APP_MODE": "production", "DEBUG": "0"})
    assert result.returncode != 0 and "SECRET_KEY" in result.stderr


def test_production_check_deploy_is_clean():
    result = run_check(
        {"APP_MODE": "production", "DEBUG": "0", "SECRET_KEY": GOOD_SECRET, "ALLOWED_HOSTS": "example.com"},
        "--deploy",
        "--fail-level",
        "WARNING",
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.django_db
def test_healthz_reports_database_cache_and_broker(client):
    response = client.get("/healthz")
    assert response.status_code == 200, response.content
    assert response.json() == {"status": "ok", "checks": {"database": "ok", "cache": "ok", "broker": "ok"}}


@pytest.mark.django_db
def test_healthz_is_503_when_a_dependency_fails(client, monkeypatch):
    from apps.core import views

    def down():
        raise ConnectionError("down")

    monkeypatch.setattr(views, "_check_broker", down)
    response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json()["checks"]["broker"] == "error"


@pytest.mark.django_db
def test_every_response_carries_a_request_id_and_a_sane_incoming_one_is_kept(client):
    assert len(client.get("/healthz")["X-Request-Id"]) == 32
    assert client.get("/healthz", HTTP_X_REQUEST_ID="abc-123")["X-Request-Id"] == "abc-123"
    assert client.get("/healthz", HTTP_X_REQUEST_ID="bad id\n")["X-Request-Id"] != "bad id\n"


def test_json_formatter_scrubs_tokens_and_carries_request_id():
    import logging

    from apps.core.auth import tokens
    from apps.core.logging import JSONFormatter, RequestContextFilter, request_id_var

    token, prefix = tokens.generate()
    record = logging.LogRecord("x", logging.INFO, __file__, 1, "got %s and Bearer %s", (token, token), None)
    marker = request_id_var.set("rid-1")
    try:
        RequestContextFilter().filter(record)
    finally:
        request_id_var.reset(marker)
    line = json.loads(JSONFormatter().format(record))
    assert token not in json.dumps(line)
    assert prefix in line["message"] and line["request_id"] == "rid-1"


@pytest.mark.parametrize("level", ["INFO", "DEBUG"])
def test_routine_lines_per_task_and_per_provider_request_show_only_at_debug(level):
    """Celery's per-task lines and the LLM SDKs' per-request lines ("HTTP Request: POST ...") are
    routine; LOG_LEVEL=DEBUG shows them, INFO does not."""
    env = {k: v for k, v in os.environ.items() if k != "LOG_LEVEL"}
    names = ["celery.app.trace", "celery.beat", "httpx", "httpx2", "apps.request"]
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import logging, django; django.setup(); "
            f"print(' '.join(str(logging.getLogger(n).isEnabledFor(logging.INFO)) for n in {names!r}))",
        ],
        cwd=ROOT,
        env={**env, "DJANGO_SETTINGS_MODULE": "config.settings", "LOG_LEVEL": level},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    shown = dict(zip(names, done.stdout.split(), strict=True))
    routine = "True" if level == "DEBUG" else "False"
    assert shown == {
        "celery.app.trace": routine,
        "celery.beat": routine,
        "httpx": routine,
        "httpx2": routine,
        "apps.request": "True",
    }


def test_scrub_redacts_session_tokens_in_websocket_urls():
    from apps.core.logging import scrub

    line = scrub("GET /ws/visitor/abc/?session=cvs_secretvalue&since=5")
    assert "cvs_secretvalue" not in line and "since=5" in line


PRODUCTION_SCRAPE = """
import django
django.setup()
from django.test import Client

client = Client()
for path, host in [
    ("/metrics", "web-1.internal:8000"),
    ("/metrics", "203.0.113.9:8000"),
    ("/healthz", "chat.example.com"),
    ("/api/v1/chats", "chat.example.com"),
]:
    response = client.get(path, HTTP_HOST=host, HTTP_AUTHORIZATION="Bearer scrape-token")
    print(path, host, response.status_code)
"""


def test_production_metrics_scrape_over_plain_http_with_the_target_named_in_allowed_hosts(tmp_path):
    # The documented scrape job: plain HTTP to each host's web process, by the name Prometheus uses
    # for it, which the deployment lists in ALLOWED_HOSTS (the one setting the metrics guide names).
    env = {k: v for k, v in os.environ.items() if k not in ("DEBUG", "SECRET_KEY", "APP_MODE", "DATABASE_URL")}
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "APP_MODE": "production",
            "DEBUG": "0",
            "SECRET_KEY": GOOD_SECRET,
            "ALLOWED_HOSTS": "chat.example.com,web-1.internal",
            "METRICS_TOKEN": "scrape-token",
            "VAR_DIR": str(tmp_path),
        }
    )
    result = subprocess.run(
        [sys.executable, "-c", PRODUCTION_SCRAPE], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    answers = result.stdout.splitlines()
    assert answers == [
        "/metrics web-1.internal:8000 200",  # no redirect to https for the scrape
        "/metrics 203.0.113.9:8000 400",  # a name the deployment did not list is still refused
        "/healthz chat.example.com 200",
        "/api/v1/chats chat.example.com 301",  # everything else still goes to https
    ], result.stderr[-3000:]
