"""Print a supervisord configuration that runs every process of a Procfile (`make run`, or a
production host without systemd: scripts/start.sh).

Usage: supervisor_conf.py [--logs LOG_DIR] PROCFILE RUN_DIR

Without --logs (`make run`), supervisord stays in the foreground and every process writes to its
terminal. With --logs (production), supervisord runs in the background, each process writes to
LOG_DIR/<name>.log (rotated), `supervisorctl -c RUN_DIR/supervisord.conf` reaches it through a socket
only its user may open, and a process gets PRODUCTION_STOP_WAIT_SECONDS to finish its work on stop.

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
# As the deployment guide's systemd unit (TimeoutStopSec): a worker finishes its running tasks.
PRODUCTION_STOP_WAIT_SECONDS = 30


def processes(procfile: Path) -> list[tuple[str, str]]:
    entries = []
    for raw in procfile.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        name, _, command = line.partition(":")
        entries.append((name.strip(), command.strip()))
    return entries


def render(procfile: Path, run_dir: Path, log_dir: Path | None = None) -> str:
    run_dir = run_dir.resolve()
    log_dir = log_dir.resolve() if log_dir is not None else None
    stop_wait = STOP_WAIT_SECONDS if log_dir is None else PRODUCTION_STOP_WAIT_SECONDS
    out = [
        "[supervisord]",
        # in the foreground supervisord prints its own lines (a process spawned, exited, restarted)
        # to the terminal as well as to its log file; in production it detaches from its starter
        f"nodaemon={'true' if log_dir is None else 'false'}",
        f"logfile={(log_dir or run_dir) / 'supervisord.log'}",
        f"logfile_maxbytes={'1MB' if log_dir is None else '50MB'}",
        f"logfile_backups={1 if log_dir is None else 5}",
        "loglevel=info",
        f"pidfile={run_dir / 'supervisord.pid'}",
        f"childlogdir={log_dir or run_dir}",
    ]
    if os.geteuid() == 0:  # said explicitly, or supervisord warns that it keeps root's privileges
        out.append("user=root")
    out.append("")
    if log_dir is not None:
        socket = run_dir / "supervisor.sock"
        out += [
            # supervisorctl's way in: a unix socket only the service's user may open, no TCP port
            "[unix_http_server]",
            f"file={socket}",
            "chmod=0700",
            "",
            "[rpcinterface:supervisor]",
            "supervisor.rpcinterface_factory = supervisor.rpcinterface:make_main_rpcinterface",
            "",
            "[supervisorctl]",
            f"serverurl=unix://{socket}",
            "",
        ]
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
            f"stopwaitsecs={stop_wait}",
            "stopasgroup=true",
            "killasgroup=true",
            "redirect_stderr=true",
            *(
                ["stdout_logfile=/dev/stdout", "stdout_logfile_maxbytes=0"]
                if log_dir is None
                else [
                    f"stdout_logfile={log_dir / (name + '.log')}",
                    "stdout_logfile_maxbytes=50MB",
                    "stdout_logfile_backups=5",
                ]
            ),
            # print() lines (Celery's banner) reach the terminal at once, not when a buffer fills
            'environment=PYTHONUNBUFFERED="1"',
            "",
        ]
    return "\n".join(out)


def main(argv: list[str]) -> None:
    log_dir = None
    if argv[:1] == ["--logs"]:
        log_dir, argv = Path(argv[1]), argv[2:]
    if len(argv) != 2:
        sys.exit("usage: supervisor_conf.py [--logs LOG_DIR] PROCFILE RUN_DIR")
    sys.stdout.write(render(Path(argv[0]), Path(argv[1]), log_dir))


if __name__ == "__main__":
    main(sys.argv[1:])
