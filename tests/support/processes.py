"""A real process (a Celery worker) a test starts on the test's own database, broker and loopback
peers: its environment, and the wait for it to be ready."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from django.conf import settings

ROOT = Path(__file__).resolve().parents[2]


def worker_env(*, ca_bundle: str, log_level: str = "INFO") -> dict[str, str]:
    """This process's environment pointed at the test database (DATABASE_URL's server, the test
    database's name) and REDIS_URL, with loopback calls allowed and `ca_bundle` trusted."""
    url = urlsplit(os.environ["DATABASE_URL"])
    name = settings.DATABASES["default"]["NAME"]
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "DATABASE_URL": urlunsplit((url.scheme, url.netloc, "/" + name, url.query, url.fragment)),
        "REDIS_URL": settings.REDIS_URL,
        "OUTBOUND_ALLOW_LOOPBACK": "1",
        "REQUESTS_CA_BUNDLE": ca_bundle,
        "PYTHONPATH": str(ROOT),
        "LOG_LEVEL": log_level,
    }


def wait_until_ready(log: Path, process: subprocess.Popen, timeout: float = 60.0) -> None:
    """Until a Celery worker writing to `log` says it is ready; fails with the log's end if it
    exits first or takes longer than `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"the worker exited ({process.returncode}):\n{log.read_text()[-3000:]}")
        if " ready." in log.read_text(errors="replace"):
            return
        time.sleep(0.1)
    raise AssertionError(f"the worker did not get ready in {timeout} s:\n{log.read_text()[-3000:]}")
