"""What a newcomer reads first: the API reference pages load nothing from outside hosts,
`issue_token` names the valid scopes and presets, the admin's scope picker does not advertise what
does not exist yet, the development admin sign-in, and the paths the README and the guides name.
(The guides' local-webhooks example runs in CI as written: .ci/readme_webhooks.sh.)"""

from __future__ import annotations

import contextlib
import http.server
import io
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from django.contrib.auth import authenticate
from django.core.management import call_command
from django.test import override_settings

from apps.core.admin import IssueTokenForm
from apps.core.auth import scopes as catalogue
from apps.core.auth.availability import coming_scopes, routed_scopes

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
GUIDES = {path: path.read_text(encoding="utf-8") for path in sorted((ROOT / "docs").rglob("*.md"))}
WEBHOOKS_GUIDE = (ROOT / "docs" / "integrating" / "webhooks.md").read_text(encoding="utf-8")

# --- docs pages ------------------------------------------------------------------------------------------


def external_references(html: str) -> list[str]:
    refs = re.findall(r"""(?:src|href)\s*=\s*["']([^"']+)["']""", html)
    refs += re.findall(r"""@import\s+(?:url\()?["']?([^"')\s]+)""", html)
    refs += re.findall(r"""url\(\s*["']?(https?:[^"')]+)""", html)
    return [ref for ref in refs if re.match(r"^(https?:)?//", ref)]


@pytest.mark.django_db
@pytest.mark.parametrize("page", ["/api/redoc/", "/api/docs/"])
def test_docs_pages_load_nothing_from_outside_hosts(client, page):
    response = client.get(page)
    assert response.status_code == 200
    html = response.content.decode()
    assert "<script" in html  # the page really loads its viewer
    assert external_references(html) == []


def test_the_external_reference_detector_sees_google_fonts():
    html = '<link rel="stylesheet" href="https://fonts.googleapis.com/css2?family=Roboto"><script src="//x.io/a.js">'
    assert len(external_references(html)) == 2


# --- scopes that grant nothing yet ------------------------------------------------------------------------


def test_coming_scopes_are_those_no_mounted_route_accepts():
    assert "chats:read" in routed_scopes() and "chats:read" not in coming_scopes()
    assert coming_scopes() == catalogue.OPERATIONAL_SCOPES - routed_scopes()
    assert "partners:withdraw" not in coming_scopes()  # reserved, said so separately


@pytest.mark.django_db
def test_admin_scope_picker_marks_scopes_without_endpoints_as_coming():
    from types import SimpleNamespace

    # the admin gives its form the request (the user whose reach it checks): a superuser here
    superuser = SimpleNamespace(is_superuser=True, is_active=True, has_perm=lambda perm: True)
    form = type("Form", (IssueTokenForm,), {"request": SimpleNamespace(user=superuser)})()
    labels = dict(form.fields["scope_choices"].choices)
    assert set(labels) == catalogue.ALL_SCOPES
    for scope, label in labels.items():
        assert ("[coming" in label) == (scope in coming_scopes()), label
    assert "[reserved" in labels["partners:withdraw"]
    presets = dict(form.fields["preset"].choices)
    for name, scopes in catalogue.PRESETS.items():
        assert ("[coming" in presets[name]) == bool(set(scopes) & coming_scopes()), presets[name]


def run_issue_token(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", "issue_token", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings"},
    )


def test_issue_token_help_lists_every_scope_and_the_presets():
    out = run_issue_token("--help")
    assert out.returncode == 0
    compact = "".join(out.stdout.split())  # argparse wraps lines anywhere
    for scope in catalogue.ALL_SCOPES:
        assert scope in compact, scope
    for name, scopes in catalogue.PRESETS.items():
        assert f"{name}={','.join(scopes)}" in compact, name
    text = compact
    assert "(coming)" in text and "(reserved)" in text
    assert f"`all`(the{len(catalogue.OPERATIONAL_SCOPES)}operationalscopes)" in compact


@pytest.mark.django_db
def test_an_unknown_scope_is_refused_with_the_valid_scopes_and_presets(widget, capsys):
    with pytest.raises(SystemExit) as exited:
        call_command("issue_token", "--widget", str(widget.pk), "--scopes", "chats:read,chats:reed")
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1  # one line
    assert err.startswith("unknown scopes: chats:reed; valid scopes: ")
    for scope in catalogue.ALL_SCOPES:
        assert scope in err
    assert "presets: ai-setup = widget:read," in err and "support-agents = support:read" in err


# --- Django admin sign-in in development ----------------------------------------------------------------


@pytest.mark.django_db
def test_dev_admin_prints_credentials_that_sign_in(client):
    out = io.StringIO()
    call_command("dev_admin", stdout=out)
    printed = json.loads(out.getvalue())
    user = authenticate(username=printed["username"], password=printed["password"])
    assert user is not None and user.is_staff and user.is_superuser
    assert client.login(username=printed["username"], password=printed["password"])
    assert client.get("/admin/").status_code == 200
    again = io.StringIO()
    call_command("dev_admin", stdout=again)  # a fresh password each time; the old one stops working
    assert authenticate(username="admin", password=printed["password"]) is None


@pytest.mark.django_db
def test_dev_admin_is_refused_in_production(capsys):
    with override_settings(PRODUCTION=True), pytest.raises(SystemExit):
        call_command("dev_admin")
    assert "development only" in capsys.readouterr().err
    from django.contrib.auth import get_user_model

    assert not get_user_model().objects.filter(username="admin").exists()


def test_make_run_prints_the_admin_sign_in():
    script = (ROOT / "scripts" / "run.sh").read_text(encoding="utf-8")
    assert "manage.py dev_admin" in script and "Django admin" in script


def test_make_run_names_every_procfile_process_as_the_readme_and_quickstart_show():
    procfile = (ROOT / "Procfile").read_text(encoding="utf-8")
    names = [line.partition(":")[0].strip() for line in procfile.splitlines() if line.strip()]
    seed = json.dumps({"widget_id": 1, "button_guid": "g", "token": "cwt_t"})
    admin = json.dumps({"url": "/admin/", "username": "admin", "password": "p"})
    banner = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "run_banner.py"), seed, "8000", admin, "demo-p"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    processes = next(line for line in banner.splitlines() if line.startswith("  Processes: "))
    for name in names:
        assert re.search(rf"\b{name}\b", processes), name
    assert processes in README
    assert processes in GUIDES[ROOT / "docs" / "quickstart.md"]


def _banner_args(port: int) -> list[str]:
    seed = json.dumps({"widget_id": 1, "button_guid": "g", "token": "cwt_t"})
    admin = json.dumps({"url": "/admin/", "username": "admin", "password": "p"})
    return [sys.executable, str(ROOT / "scripts" / "run_banner.py"), "--after-web", seed, str(port), admin, "demo-p"]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class _Healthy(http.server.BaseHTTPRequestHandler):
    """A web process that answers `/healthz` (and every other GET) with 200."""

    def do_GET(self):
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass


@contextlib.contextmanager
def _healthy_web(port: int = 0):
    """A stand-in for make run's web process, listening on `port` (any free one with 0)."""
    server = http.server.HTTPServer(("127.0.0.1", port), _Healthy)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server
    finally:
        server.shutdown()


def test_make_run_prints_the_banner_once_the_web_process_answers():
    # given make run's banner waiting for a web process that starts listening a moment later
    port = _free_port()
    banner = subprocess.Popen(_banner_args(port), stdout=subprocess.PIPE, text=True)
    time.sleep(1.0)
    assert banner.poll() is None  # still waiting: nothing listens yet

    with _healthy_web(port):
        # when the web process answers, then the whole box is printed, with no "not answered" line
        out, _ = banner.communicate(timeout=30)
    assert banner.returncode == 0
    assert out.startswith("=" * 78) and out.rstrip().endswith("=" * 78)
    assert f"http://127.0.0.1:{port}/demo/" in out and "has not answered" not in out


def test_make_run_prints_the_banner_once_every_worker_is_ready(tmp_path):
    # given a web process that answers, and make run waiting for two workers to be ready
    env = {**os.environ, "RUN_READY_DIR": str(tmp_path), "RUN_READY_WORKERS": "2"}
    with _healthy_web() as server:
        banner = subprocess.Popen(_banner_args(server.server_port), stdout=subprocess.PIPE, text=True, env=env)
        (tmp_path / "101").touch()
        time.sleep(1.5)
        assert banner.poll() is None  # one worker is not ready yet: nothing printed
        # when the second worker is ready (config/celery.py leaves its file), then the box shows
        (tmp_path / "102").touch()
        out, _ = banner.communicate(timeout=30)
    assert banner.returncode == 0 and out.startswith("=" * 78)


def test_a_worker_leaves_its_ready_file_only_under_make_run(tmp_path, monkeypatch):
    from config.celery import tell_make_run

    monkeypatch.delenv("RUN_READY_DIR", raising=False)
    tell_make_run()
    assert list(tmp_path.iterdir()) == []
    monkeypatch.setenv("RUN_READY_DIR", str(tmp_path))
    tell_make_run()
    assert [p.name for p in tmp_path.iterdir()] == [str(os.getpid())]


def test_ctrl_c_while_the_banner_waits_prints_nothing():
    # given the banner waiting for a web process that never answers
    banner = subprocess.Popen(_banner_args(_free_port()), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(1.0)
    # when Ctrl-C reaches make run's process group, then the banner leaves quietly
    banner.send_signal(signal.SIGINT)
    out, err = banner.communicate(timeout=30)
    assert banner.returncode == 0 and out == "" and "Traceback" not in err


# --- the README and the guides -------------------------------------------------------------------------


def named_paths(text: str) -> set[str]:
    """Backticked repository paths in a document (`apps/...`, `x/y.py`, `.ci/...`, `config/...`)."""
    found = set()
    for token in re.findall(r"`([^`\s]+)`", text):
        if token.startswith(("/", "http", "$", "-")) or any(c in token for c in "{}<>=:?*|,"):
            continue
        if "/" in token and (token.endswith((".py", ".sh", ".md", ".toml", ".yaml")) or token.startswith("apps/")):
            found.add(token.rstrip("/"))
    return found


def test_the_readme_and_the_guides_name_real_paths():
    paths = named_paths(README) | set().union(*(named_paths(text) for text in GUIDES.values()))
    assert {"apps/chats/asyncapi.py", "config/celery.py", "scripts/webhook_receiver.py"} <= paths  # the scan works
    missing = [p for p in sorted(paths) if not (ROOT / p).exists() and not (ROOT / "apps" / p).exists()]
    assert not missing, f"the README or the guides name paths that do not exist: {missing}"


def test_the_local_webhooks_example_is_marked_for_ci():
    for marker in ("local-webhooks-1", "local-webhooks-2"):
        assert f"<!-- docs-example: {marker} -->\n```sh\n" in WEBHOOKS_GUIDE
    assert "OUTBOUND_ALLOW_LOOPBACK=1" in WEBHOOKS_GUIDE and "REQUESTS_CA_BUNDLE=" in WEBHOOKS_GUIDE
    assert "Webhook(secret.encode())" in WEBHOOKS_GUIDE


def test_make_run_says_its_token_is_new_on_every_start_as_the_quickstart_shows():
    seed = json.dumps({"widget_id": 1, "button_guid": "g", "token": "cwt_t"})
    banner = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "run_banner.py"), seed, "8000", "null", ""],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    note = banner[banner.index("    cwt_t") + 1]
    assert "new token on every start" in note and "revoked" in note
    assert note in GUIDES[ROOT / "docs" / "quickstart.md"]
