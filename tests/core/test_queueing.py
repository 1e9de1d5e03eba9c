"""apps.core.queueing: services send their tasks by registered name."""

import re
from pathlib import Path

import pytest
from celery.exceptions import NotRegistered

from apps.core import queueing

ROOT = Path(__file__).resolve().parents[2]


def test_every_task_a_service_sends_by_name_is_registered_under_that_name():
    named = set()
    for path in (ROOT / "apps").rglob("*.py"):
        if "tests" not in path.parts:
            named |= set(re.findall(r'queueing\.task\(\s*"([^"]+)"', path.read_text(encoding="utf-8")))
    assert len(named) >= 8
    for name in sorted(named):
        assert queueing.task(name).name == name


def test_a_name_no_module_registers_is_refused():
    with pytest.raises(NotRegistered):
        queueing.task("apps.kb.tasks.no_such_task")
    with pytest.raises(ModuleNotFoundError):
        queueing.task("apps.kb.no_such_module.task")
