"""The web's processes above one (scripts/web.sh): uvicorn's own supervisor, with a listening socket
of its own in every process.

`uvicorn --workers N` binds one socket and every process accepts from it. The kernel wakes the
process that waited last, so connections opened together land mostly in one process and stay there
while they are kept alive: of 20 connections opened at once to two processes, 13 to 17 went to one
of them (in one benchmark round, all 20), whose clients then waited about twice as long. Here each process binds
its own socket to the same address with SO_REUSEPORT, and the kernel spreads new connections over
the sockets by the connection's addresses.

Everything else is uvicorn's: its command line (`python -m apps.platform.webserver --workers N` takes uvicorn's
options), its Config, and its Multiprocess supervisor (it restarts a process that dies, stops the
start when one fails to start, restarts them all on SIGHUP and stops them on SIGTERM or SIGINT). The
supervisor hands each process it starts the sockets it was given, pickled; the one given here is
`OwnSocket`, which unpickles in the new process as a socket bound there. The parent keeps a socket
bound to the address without listening: it holds the address (and a port of 0 to one number) for
the processes, and the kernel hands connections only to listening sockets. A Unix socket (--uds,
--fd) has no such group, so the processes share it as under `uvicorn --workers`.

A process that stops (SIGHUP's restart, a crash) closes its socket, and the kernel resets the
connections still waiting in that socket's queue unless `net.ipv4.tcp_migrate_req` is 1, which moves
them to another process's socket.
"""

from __future__ import annotations

import logging
import os
import socket
import sys

import click
from uvicorn.config import LOGGING_CONFIG, STARTUP_FAILURE, Config
from uvicorn.main import main as uvicorn_command
from uvicorn.supervisors import Multiprocess

logger = logging.getLogger("uvicorn.error")


def bind(host: str, port: int) -> socket.socket:
    """A TCP socket bound to (host, port) in the address's SO_REUSEPORT group, not listening."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind((host, port))
    return sock


def listening(host: str, port: int, backlog: int) -> socket.socket:
    """A process's own listening socket on the shared address (what OwnSocket unpickles as)."""
    sock = bind(host, port)
    sock.listen(backlog)
    return sock


class OwnSocket:
    """Stands in the supervisor's socket list and becomes a new listening socket in each process."""

    def __init__(self, host: str, port: int, backlog: int):
        self.host, self.port, self.backlog = host, port, backlog

    def __reduce__(self):
        return listening, (self.host, self.port, self.backlog)


def uvicorn_config(args: list[str]) -> Config:
    """uvicorn's Config from uvicorn's command-line options, as its own command builds it."""
    params = dict(uvicorn_command.make_context("uvicorn", list(args)).params)
    app_dir = params.pop("app_dir")
    if app_dir is not None:
        sys.path.insert(0, app_dir)
    params["log_config"] = LOGGING_CONFIG if params["log_config"] is None else params["log_config"]
    params["headers"] = [header.split(":", 1) for header in params["headers"]]
    for name in ("reload_dirs", "reload_includes", "reload_excludes"):
        params[name] = params[name] or None
    return Config(params.pop("app"), **params)


def main(args: list[str]) -> None:
    try:
        config = uvicorn_config(args)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except click.exceptions.Exit as exc:  # --help and --version have printed their text
        sys.exit(exc.exit_code)
    if config.workers < 2 or config.reload:
        sys.exit("webserver: runs 2 or more processes (--workers N) and never reloads; use uvicorn for that")
    holder = None
    if config.uds or config.fd is not None:
        # a Unix socket has no SO_REUSEPORT group: the processes share it, as uvicorn's would
        sockets = [config.bind_socket()]
    else:
        try:
            holder = bind(config.host, config.port)
        except OSError as exc:
            logger.error(exc)
            sys.exit(STARTUP_FAILURE)
        config.port = holder.getsockname()[1]
        scheme = "https" if config.is_ssl else "http"
        host = f"[{config.host}]" if ":" in config.host else config.host
        logger.info("Uvicorn running on %s://%s:%d (Press CTRL+C to quit)", scheme, host, config.port)
        sockets = [OwnSocket(config.host, config.port, config.backlog)]
    supervisor = Multiprocess(config, sockets=sockets)  # type: ignore[arg-type]
    try:
        supervisor.run()
    finally:
        if holder is not None:
            holder.close()
        if config.uds and os.path.exists(config.uds):
            os.remove(config.uds)
    if any(process.exitcode == STARTUP_FAILURE for process in supervisor.processes):
        sys.exit(STARTUP_FAILURE)


if __name__ == "__main__":
    main(sys.argv[1:])
