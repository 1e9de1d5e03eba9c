"""Test settings: the project's settings plus a test-only app and URLs (never in production)."""

import atexit
import os
import shutil
import tempfile

os.environ.setdefault("APP_MODE", "test")
# Each test run counts into a folder of its own (prometheus-client's multiprocess files), removed at exit.
if "PROMETHEUS_MULTIPROC_DIR" not in os.environ:
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="chatwidget-metrics-")
    atexit.register(shutil.rmtree, os.environ["PROMETHEUS_MULTIPROC_DIR"], True)

from config.settings import *  # noqa: E402,F403
from config.settings import INSTALLED_APPS, VAR_DIR  # noqa: E402

INSTALLED_APPS = [*INSTALLED_APPS, "tests.testapp"]
ROOT_URLCONF = "tests.urls"
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
CELERY_TASK_ALWAYS_EAGER = True
MEDIA_ROOT = VAR_DIR / "test-media"
SCHEMA_INCLUDE_TEST_ROUTES = True
# The relay's reader thread would poll the test database from outside the test's transaction; the
# relay's own tests turn it on.
REALTIME_RELAY = False
# The request path's provider deadlines (apps.core.provider_waits) at the worker's own values: a test
# process's first provider call builds the SDK's clients inside its deadline, which on a loaded
# machine can take longer than production's 5 s. The deadline tests set their own.
AI_REQUEST_EMBED_DEADLINE_SECONDS = 15.0
AI_REQUEST_PROVIDER_DEADLINE_SECONDS = 45.0
