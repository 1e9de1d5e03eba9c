"""Print a supervisord configuration that runs every process of a Procfile (`make run`).

Usage: supervisor_conf.py PROCFILE RUN_DIR

The Procfile stays the one list of processes (production runs it under systemd or another
supervisor); this only restates it in supervisord's terms. Each process:
- runs its Procfile line through /bin/sh (the lines use `${PORT:-8000}` and `env`), in its own
  process group, with the environment of `make run`;
- is restarted whenever it exits, so one process dying never stops the others;
- writes to supervisord's standard output, which is the terminal of `make run`;
- stops with SIGTERM to its whole group (a prefork worker's pool included) and is killed with its
  group STOP_WAIT_SECONDS later (a warm shutdown of a worker takes a few seconds).

Every process belongs to one supervisord group: supervisord stops groups one after another, and
the processes of one group together, so with one group Ctrl-C ends everything within about
STOP_WAIT_SECONDS however many processes the Procfile lists.
"""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

STOP_WAIT_SECONDS = 8


def processes(procfile: Path) -> list[tuple[str, str]]:
    entries = []
    for raw in procfile.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        name, _, command = line.partition(":")
        entries.append((name.strip(), command.strip()))
    return entries


def render(procfile: Path, run_dir: Path) -> str:
    run_dir = run_dir.resolve()
    out = [
        "[supervisord]",
        # in the foreground supervisord prints its own lines (a process spawned, exited, restarted)
        # to the terminal as well as to its log file
        "nodaemon=true",
        f"logfile={run_dir / 'supervisord.log'}",
        "logfile_maxbytes=1MB",
        "logfile_backups=1",
        "loglevel=info",
        f"pidfile={run_dir / 'supervisord.pid'}",
        f"childlogdir={run_dir}",
    ]
    if os.geteuid() == 0:  # said explicitly, or supervisord warns that it keeps root's privileges
        out.append("user=root")
    out.append("")
    entries = processes(procfile)
    out += ["[group:chatwidget]", "programs=" + ",".join(name for name, _ in entries), ""]
    for name, command in entries:
        # supervisord expands %(name)s in its values: a literal % (celery's `-n ai@%h`) is doubled
        program = shlex.quote(f"exec {command}").replace("%", "%%")
        out += [
            f"[program:{name}]",
            f"command=/bin/sh -c {program}",
            f"directory={procfile.resolve().parent}",
            "autostart=true",
            "autorestart=true",
            "startsecs=2",
            "startretries=1000",
            "stopsignal=TERM",
            f"stopwaitsecs={STOP_WAIT_SECONDS}",
            "stopasgroup=true",
            "killasgroup=true",
            "redirect_stderr=true",
            "stdout_logfile=/dev/stdout",
            "stdout_logfile_maxbytes=0",
            # print() lines (Celery's banner) reach the terminal at once, not when a buffer fills
            'environment=PYTHONUNBUFFERED="1"',
            "",
        ]
    return "\n".join(out)


if __name__ == "__main__":
    sys.stdout.write(render(Path(sys.argv[1]), Path(sys.argv[2])))
