"""The widget's place-in-line text in its seven languages (frontend/widget/test/queue.mjs, run with
node: the widget's own string tables, not the server's)."""

import shutil
import subprocess
from pathlib import Path

import pytest

WIDGET_DIR = Path(__file__).resolve().parents[3] / "frontend" / "widget"


def test_the_queue_line_reads_right_in_every_language():
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is needed (make widget installs it in CI)")
    run = subprocess.run([node, "test/queue.mjs"], cwd=WIDGET_DIR, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert "queue lines: ok" in run.stdout
