"""scripts/start.sh: a production host's processes under supervisord, without systemd or root."""

import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SUPERVISORCTL = Path(sys.executable).parent / "supervisorctl"


def _env(tmp_path):
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PROMETHEUS_MULTIPROC_DIR", "VAR_DIR", "DJANGO_SETTINGS_MODULE")
    }
    env["PROCFILE"] = str(tmp_path / "Procfile")
    return env


def _status(conf):
    return subprocess.run([SUPERVISORCTL, "-c", conf, "status"], capture_output=True, text=True, timeout=30).stdout


def test_start_sh_empties_the_metrics_folder_then_runs_every_procfile_line_in_the_background(tmp_path):
    # given an env file, a host's metrics folder left by earlier processes, and a Procfile of two lines
    var = tmp_path / "var"
    (var / "metrics").mkdir(parents=True)
    (var / "metrics" / "counter_123.db").write_bytes(b"old")
    (tmp_path / "env").write_text(f"VAR_DIR={var}\nGREETING=hello\n")
    sleeper = f"{sys.executable} -c 'import os, time; print(os.environ[\"GREETING\"], flush=True); time.sleep(600)'"
    (tmp_path / "Procfile").write_text(f"one: {sleeper}\ntwo: {sleeper}\n")
    conf = str(var / "run" / "supervisord.conf")
    env = _env(tmp_path)
    try:
        # when the host starts
        started = subprocess.run(
            ["scripts/start.sh", str(tmp_path / "env")], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
        )
        assert started.returncode == 0, started.stdout + started.stderr

        # then the script has returned (supervisord detached) with both processes running, each
        # with the env file's settings and a log file of its own, and the metrics folder emptied
        deadline = time.monotonic() + 60
        while _status(conf).count("RUNNING") < 2 and time.monotonic() < deadline:
            time.sleep(0.5)
        status = _status(conf)
        assert "chatwidget:one" in status and "chatwidget:two" in status and status.count("RUNNING") == 2, status
        assert not (var / "metrics" / "counter_123.db").exists()
        deadline = time.monotonic() + 30
        while "hello" not in (var / "log" / "one.log").read_text() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert "hello" in (var / "log" / "one.log").read_text()

        # and a second start while it runs is refused before it touches the metrics folder
        (var / "metrics" / "counter_456.db").write_bytes(b"live")
        again = subprocess.run(
            ["scripts/start.sh", str(tmp_path / "env")], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
        )
        assert again.returncode == 1 and "already running" in again.stderr
        assert (var / "metrics" / "counter_456.db").exists()
    finally:
        subprocess.run([SUPERVISORCTL, "-c", conf, "shutdown"], capture_output=True, timeout=60)


def test_start_sh_refuses_without_a_readable_env_file(tmp_path):
    result = subprocess.run(
        ["scripts/start.sh", str(tmp_path / "missing.env")],
        cwd=ROOT,
        env=_env(tmp_path),
        capture_output=True,
        text=True,
    )
    assert result.returncode == 2 and "ENV_FILE" in result.stderr
