"""The engine enqueues deliver_due by its registered Celery name: every process that can fan out
(web, worker, beat, a shell) must have the task registered once Django is set up."""

import os
import subprocess
import sys


def test_a_fresh_process_can_trigger_the_delivery_task():
    script = (
        "import django; django.setup()\n"
        "from unittest import mock\n"
        "from celery import current_app\n"
        "from apps.webhooks import delivery\n"
        "task = current_app.tasks[delivery.DELIVER_TASK]\n"
        "with mock.patch.object(type(task), 'delay') as delay:\n"
        "    delivery.trigger()\n"
        "assert delay.called, 'deliver_due was not enqueued'\n"
        "print('ok')\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings"},
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip().endswith("ok")
