"""Celery's configuration is Django's CELERY_* settings (`config_from_object` with the CELERY
namespace), read as they are when Celery asks."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import config.celery
from apps.platform.broker import POLL_SECONDS
from config.celery import BEAT_SCHEDULE, app


def test_celery_reads_the_django_settings_it_is_given(settings):
    assert app.conf.task_serializer == settings.CELERY_TASK_SERIALIZER == "json"
    assert app.conf.task_acks_late is settings.CELERY_TASK_ACKS_LATE is True
    settings.CELERY_TIMEZONE = "Europe/Moscow"  # a value changed later is read as it is then
    assert app.conf.timezone == "Europe/Moscow"


def test_a_setting_django_lacks_is_celerys_default():
    assert app.conf.task_default_priority is None
    assert app.conf.task_time_limit is None


def test_the_embedded_brokers_connections_use_its_transport_and_polling_interval(tmp_path):
    """Without REDIS_URL a worker's broker connection is apps.platform.broker.SQLiteTransport, which asks
    an idle queue every POLL_SECONDS, not kombu's SQLAlchemy transport with its 1 s default."""
    code = (
        "import django\n"
        "django.setup()\n"
        "from config.celery import app\n"
        "with app.connection_for_read() as connection:\n"
        "    transport = connection.transport\n"
        "    print(type(transport).__module__, type(transport).__name__, transport.polling_interval)\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    env.update(DJANGO_SETTINGS_MODULE="config.settings", VAR_DIR=str(tmp_path))
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["apps.platform.broker", "SQLiteTransport", str(POLL_SECONDS)]


def test_every_task_the_configuration_names_is_registered(settings):
    """A dotted task name in config/celery.py (the beat schedule, its comments) or in the task routes
    names a task a worker runs: a misspelt or removed one would be scheduled or routed and never run."""
    source = Path(config.celery.__file__).read_text()
    named = set(re.findall(r"\bapps\.\w+\.tasks\w*\.\w+", source)) | set(settings.CELERY_TASK_ROUTES)
    named |= {task for task, _every in BEAT_SCHEDULE.values()}
    app.loader.import_default_modules()
    assert named and sorted(named - set(app.tasks)) == []
