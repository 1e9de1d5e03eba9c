"""A Celery worker's own metrics port (METRICS_PORT; 0, the default, serves none).

On one host the web's `GET /metrics` sums the files of every process of the host, the workers'
included. A container has a folder of its own, so the counts a worker keeps (delivery attempts, AI
answers, provider errors) reach no web's scrape: the worker's main process serves them itself, the
files of its pool's processes summed (apps.platform.metrics.exposition), on `GET /metrics` of this
port. The values read at scrape time from the database and the broker stay with the web's
/metrics, which reads them already. Who may read is the web's rule (apps.platform.metrics.refusal),
the caller being the peer of the socket: nothing stands in front of this port.

A stdlib server on a daemon thread of the main process (config/celery.py starts it when the worker
is ready): one scrape at a time, each bounded by the handler's timeout, so a slow caller delays the
next scrape, never a task.
"""

from __future__ import annotations

import json
import logging
import threading
from http import HTTPStatus
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from apps.platform import metrics

logger = logging.getLogger(__name__)

PROBLEM_CONTENT_TYPE = "application/problem+json"
PATH = "/metrics"


def _problem(environ, start_response, status: int, code: str, title: str, detail: str, headers=None):
    """The problem+json the web answers (apps.core.errors.problem_body), for this port's refusals."""
    body = {
        "type": f"/api/problems/{code}",
        "title": title,
        "status": status,
        "detail": detail,
        "instance": environ.get("PATH_INFO") or "/",
        "code": code,
    }
    start_response(
        f"{status} {HTTPStatus(status).phrase}", [("Content-Type", PROBLEM_CONTENT_TYPE), *(headers or {}).items()]
    )
    return [json.dumps(body).encode()]


def application(environ, start_response):
    """GET /metrics: this worker's processes in the Prometheus text format, or a problem."""
    if environ.get("PATH_INFO") != PATH:
        return _problem(environ, start_response, 404, "not_found", "Not found", "This port answers GET /metrics only.")
    if environ.get("REQUEST_METHOD") != "GET":
        return _problem(
            environ, start_response, 405, "method_not_allowed", "Method not allowed", "GET only.", {"Allow": "GET"}
        )
    refused = metrics.refusal(environ.get("HTTP_AUTHORIZATION", ""), environ.get("REMOTE_ADDR", ""))
    if refused is not None:
        return _problem(
            environ, start_response, refused.status, refused.code, refused.title, refused.detail, refused.headers
        )
    body = metrics.exposition(readings=False)
    start_response("200 OK", [("Content-Type", metrics.CONTENT_TYPE), ("Content-Length", str(len(body)))])
    return [body]


class _Handler(WSGIRequestHandler):
    # A caller that connects and sends nothing holds the one serving thread this long at most.
    timeout = 10

    def log_message(self, format, *args):  # noqa: A002 - the stdlib's signature
        """Scrapes come every few seconds: their request lines go to the debug level only."""
        logger.debug("metrics port: %s", format % args)


class _Server(WSGIServer):
    # A worker restarted at once finds its port free even while the old socket lingers in TIME_WAIT.
    allow_reuse_address = True


def serve(port: int, host: str = "0.0.0.0") -> WSGIServer | None:  # noqa: S104 - a container's port
    """Start serving on a daemon thread and return the server (its `server_address` holds the port
    bound, for port 0), or None when the port cannot be bound: the worker goes on with its tasks and
    the scrape's `up` reports the gap."""
    try:
        server = make_server(host, port, application, server_class=_Server, handler_class=_Handler)
    except OSError as exc:
        logger.error("metrics port: cannot listen on %s:%s: %s", host, port, exc)
        return None
    thread = threading.Thread(target=server.serve_forever, name="metrics-port", daemon=True)
    thread.start()
    logger.info("metrics port: GET /metrics on %s:%s", host, server.server_address[1])
    return server
