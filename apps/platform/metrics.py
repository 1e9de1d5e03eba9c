"""The service's Prometheus metrics (`GET /metrics`, product-decisions.md "Operations").

Two kinds of values, one scrape:

- Counted by the processes themselves (requests, open sockets, delivery attempts, AI answers,
  provider errors): prometheus-client's multiprocess mode. Every web and worker process of a host
  writes its values into files under PROMETHEUS_MULTIPROC_DIR (config/settings.py sets it before the
  library is imported) and the scrape sums the files of all of them, of processes that ended
  included (a counter never goes back). A socket gauge counts live processes only (`livesum`): a
  process that ends marks itself dead (`mark_process_dead`, below and in config/celery.py), and a
  scrape forgets the live gauges of processes gone without doing so (`forget_dead_processes`). The
  folder is emptied before the processes start (`manage.py reset_metrics`).
- Read when scraped, where the database or the broker holds the truth (queue depth and the oldest
  task per Celery queue, pending deliveries and the oldest of them, knowledge-base documents
  waiting): `ReadingsCollector`. Higher apps hand it their readers in `AppConfig.ready()`
  (`read_deliveries`, `read_kb_documents`, `watch_queue`), so the core imports none of them.

Labels hold bounded vocabularies only (a route's pattern, a status code, a driver name, an outcome):
never an id, a path as sent, a widget or anything else of a tenant.
"""

from __future__ import annotations

import atexit
import functools
import hmac
import ipaddress
import logging
import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime

from celery import current_app
from django.conf import settings
from django.utils import timezone
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest, multiprocess
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_LATEST

logger = logging.getLogger(__name__)

PREFIX = "chatwidget"
CONTENT_TYPE = CONTENT_TYPE_LATEST

# --- counted by the processes -------------------------------------------------------------------------

HTTP_REQUESTS = Counter(
    f"{PREFIX}_http_requests_total",
    "HTTP requests answered, by method, route pattern (never the path as sent) and status code.",
    ["method", "route", "status"],
)
HTTP_DURATION = Histogram(
    f"{PREFIX}_http_request_duration_seconds",
    "Time from the request reaching Django to its response, by method and route pattern.",
    ["method", "route"],
)
WEBSOCKETS_OPEN = Gauge(
    f"{PREFIX}_websockets_open",
    "Websockets accepted and not yet closed, by kind (visitor, operator), summed over live processes.",
    ["kind"],
    multiprocess_mode="livesum",
)
DELIVERY_ATTEMPTS = Counter(
    f"{PREFIX}_delivery_attempts_total",
    "Delivery attempts by kind (webhook, channel) and outcome: delivered, retrying (the row stays "
    "pending for another attempt) or failed (no attempt left, or a permanent refusal).",
    ["kind", "outcome"],
)
AI_ANSWERS = Histogram(
    f"{PREFIX}_ai_answer_duration_seconds",
    "Visitor messages the AI operator took on, by outcome (answered, handed_off, superseded, dropped, "
    "claimed_elsewhere), and the time from taking the message to the outcome (provider included).",
    ["outcome"],
    buckets=(0.5, 1.0, 2.0, 3.0, 5.0, 8.0, 13.0, 20.0, 30.0, 45.0, 60.0),
)
PROVIDER_ERRORS = Counter(
    f"{PREFIX}_ai_provider_errors_total",
    "Failed LLM provider calls, by driver (openai, anthropic, gigachat, openai_compatible) and kind "
    "(transport, timeout, rate_limited, server_error, auth, bad_request, unsupported, refused_address).",
    ["driver", "kind"],
)

DELIVERY_OUTCOMES = {"delivered": "delivered", "pending": "retrying", "failed": "failed"}
SOCKET_KINDS = ("visitor", "operator")
DELIVERY_KINDS = ("webhook", "channel")
AI_OUTCOMES = ("answered", "handed_off", "superseded", "dropped", "claimed_elsewhere")
PROVIDER_DRIVERS = ("openai", "anthropic", "gigachat", "openai_compatible")
PROVIDER_ERROR_KINDS = (
    "transport",
    "timeout",
    "rate_limited",
    "server_error",
    "auth",
    "bad_request",
    "unsupported",
    "refused_address",
)


def _start_at_zero() -> None:
    """The known label values exist from the start at 0, so a rule's rate() sees the first event and
    a dashboard sees every series before anything happened (the Prometheus guidance)."""
    for kind in SOCKET_KINDS:
        WEBSOCKETS_OPEN.labels(kind)
    for kind in DELIVERY_KINDS:
        for outcome in DELIVERY_OUTCOMES.values():
            DELIVERY_ATTEMPTS.labels(kind, outcome)
    for outcome in AI_OUTCOMES:
        AI_ANSWERS.labels(outcome)
    for driver in PROVIDER_DRIVERS:
        for kind in PROVIDER_ERROR_KINDS:
            PROVIDER_ERRORS.labels(driver, kind)


_start_at_zero()


def observe_request(*, method: str, route: str, status: int, seconds: float) -> None:
    HTTP_REQUESTS.labels(method, route, str(status)).inc()
    HTTP_DURATION.labels(method, route).observe(seconds)


def socket_opened(kind: str) -> None:
    WEBSOCKETS_OPEN.labels(kind).inc()


def socket_closed(kind: str) -> None:
    WEBSOCKETS_OPEN.labels(kind).dec()


def count_delivery_attempts(kind: str, statuses: Iterable[str]) -> None:
    """One attempt per status a delivery engine's record step answered ("gone" rows were not
    written and are not counted)."""
    for status in statuses:
        outcome = DELIVERY_OUTCOMES.get(str(status))
        if outcome is not None:
            DELIVERY_ATTEMPTS.labels(kind, outcome).inc()


def observe_ai_answer(*, outcome: str, seconds: float) -> None:
    AI_ANSWERS.labels(outcome).observe(seconds)


def count_provider_error(*, driver: str | None, kind: str) -> None:
    PROVIDER_ERRORS.labels(driver or "unknown", kind).inc()


# --- route patterns ---------------------------------------------------------------------------------

_NAMED_GROUP = re.compile(r"\(\?P<(\w+)>(?:[^()]|\([^()]*\))*\)")
UNMATCHED_ROUTE = "unmatched"


def route_label(resolver_match) -> str:
    """The URL pattern that answered, as `/api/v1/chats/{pk}/close`: Django's `route` with named
    groups shown as `{name}` and regex anchors removed. A request no pattern matched is
    `unmatched`."""
    route = getattr(resolver_match, "route", None)
    return _pattern_label(route) if route else UNMATCHED_ROUTE


@functools.lru_cache(maxsize=2048)  # one entry per URL pattern: bounded by urls.py
def _pattern_label(route: str) -> str:
    route = _NAMED_GROUP.sub(lambda m: "{" + m.group(1) + "}", route)
    route = re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", route)  # path() converters
    route = route.replace("^", "").replace("$", "").replace("\\", "").replace("/?", "")
    return "/" + route.lstrip("/")


# --- read when scraped -------------------------------------------------------------------------------

DeliveryReader = Callable[[], tuple[int, datetime | None]]
_delivery_readers: dict[str, DeliveryReader] = {}
_kb_readers: list[Callable[[], dict[str, int]]] = []
_queues: set[str] = set()


def read_deliveries(kind: str, reader: DeliveryReader) -> None:
    """`reader()` answers (pending rows, created_at of the oldest pending row or None)."""
    _delivery_readers[kind] = reader


def read_kb_documents(reader: Callable[[], dict[str, int]]) -> None:
    """`reader()` answers {state: documents} for the states still waiting to be indexed."""
    _kb_readers.append(reader)


def watch_queue(name: str) -> None:
    """A Celery queue besides the default one whose depth and oldest task are reported."""
    _queues.add(name)


def watched_queues() -> list[str]:
    return sorted({current_app.conf.task_default_queue, *_queues})


def _age(since: datetime | float | None, now: datetime) -> float:
    if since is None:
        return 0.0
    if isinstance(since, float | int):
        return max(0.0, now.timestamp() - since)
    return max(0.0, (now - since).total_seconds())


class ReadingsCollector:
    """The values read at scrape time (see the module text). A source that cannot be read reports
    `chatwidget_metrics_source_up{source} 0` and leaves its families out, instead of failing the
    scrape."""

    def collect(self):
        from apps.platform import queue_depth

        now = timezone.now()
        up = GaugeMetricFamily(
            f"{PREFIX}_metrics_source_up",
            "1 when the scrape could read the source (database, broker), else 0.",
            labels=["source"],
        )
        try:
            families, database_up = list(self._database(now)), 1.0
        except Exception:  # a scrape reports what it can
            logger.warning("metrics: the database readings failed", exc_info=True)
            families, database_up = [], 0.0
        up.add_metric(["database"], database_up)
        yield from families
        try:
            queues = queue_depth.read(watched_queues())
        except Exception:  # a scrape reports what it can
            logger.warning("metrics: the broker readings failed", exc_info=True)
            queues = None
        up.add_metric(["broker"], 0.0 if queues is None else 1.0)
        if queues is not None:
            depth = GaugeMetricFamily(
                f"{PREFIX}_celery_queue_length",
                "Tasks waiting in a Celery queue of the broker (not yet taken by a worker).",
                labels=["queue"],
            )
            age = GaugeMetricFamily(
                f"{PREFIX}_celery_queue_oldest_task_age_seconds",
                "Seconds since the oldest task waiting in a Celery queue was sent (0 when none waits).",
                labels=["queue"],
            )
            for name, (length, oldest) in queues.items():
                depth.add_metric([name], float(length))
                age.add_metric([name], _age(oldest, now) if length else 0.0)
            yield depth
            yield age
        yield up

    def _database(self, now: datetime):
        if _delivery_readers:
            pending = GaugeMetricFamily(
                f"{PREFIX}_deliveries_pending",
                "Delivery rows still to be delivered (first attempt or a retry), by kind (webhook, channel).",
                labels=["kind"],
            )
            oldest = GaugeMetricFamily(
                f"{PREFIX}_deliveries_oldest_pending_age_seconds",
                "Seconds since the oldest pending delivery row was created, by kind (0 when none is pending).",
                labels=["kind"],
            )
            for kind, reader in sorted(_delivery_readers.items()):
                count, created_at = reader()
                pending.add_metric([kind], float(count))
                oldest.add_metric([kind], _age(created_at, now) if count else 0.0)
            yield pending
            yield oldest
        if _kb_readers:
            waiting = GaugeMetricFamily(
                f"{PREFIX}_kb_documents_waiting",
                "Knowledge-base documents not indexed yet, by state (queued, processing).",
                labels=["state"],
            )
            totals: dict[str, int] = {}
            for reader in _kb_readers:
                for state, count in reader().items():
                    totals[state] = totals.get(state, 0) + count
            for state, count in sorted(totals.items()):
                waiting.add_metric([state], float(count))
            yield waiting


def exposition(*, readings: bool = True) -> bytes:
    """The whole text format of one scrape: every process's files summed, then the readings. A
    worker's own port (apps.platform.metrics_server) leaves the readings to the web's /metrics: they
    are the database's and the broker's values, the same wherever they are read."""
    forget_dead_processes()
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry)
    if readings:
        registry.register(ReadingsCollector())
    return generate_latest(registry)


# --- who may read them ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Refusal:
    """Why a scrape is not answered, as the problem+json fields of apps.core.errors' classes of the
    same code (NotAuthenticated, Forbidden)."""

    status: int
    code: str
    title: str
    detail: str
    headers: dict[str, str] = field(default_factory=dict)


def refusal(authorization: str, client: str) -> Refusal | None:
    """SECURITY: with METRICS_TOKEN set only `Authorization: Bearer <METRICS_TOKEN>` is answered (401
    otherwise); unset, only a loopback client is (403 otherwise, whatever it sends). `client` is
    the caller's address as the caller's server knows it: the web's /metrics passes the address the
    rate limits use (TRUSTED_PROXY_HOPS applies), a worker's port the peer of its socket."""
    token = settings.METRICS_TOKEN
    if token:
        scheme, _, given = authorization.partition(" ")
        if scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), token.encode()):
            return None
        return Refusal(
            401,
            "not_authenticated",
            "Authentication required",
            "Send Authorization: Bearer <METRICS_TOKEN>.",
            {"WWW-Authenticate": 'Bearer realm="metrics"'},
        )
    if _is_loopback(client):
        return None
    return Refusal(
        403, "forbidden", "Forbidden", "Without METRICS_TOKEN the metrics are answered to loopback callers only."
    )


def _is_loopback(address: str) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    mapped = getattr(ip, "ipv4_mapped", None)
    return (mapped or ip).is_loopback


# --- process life ---------------------------------------------------------------------------------------


def mark_process_dead(pid: int | None = None) -> None:
    """Drop the live gauges of a process that ends (its counters stay, summed into every scrape)."""
    multiprocess.mark_process_dead(pid or os.getpid())


_LIVE_GAUGE_FILE = re.compile(r"^gauge_live\w+_(\d+)\.db$")


def forget_dead_processes() -> None:
    """Drop the live gauges of every process of this host that is gone without marking itself dead:
    uvicorn ends a stopped web process by raising the stop signal again, past atexit, and a killed
    process runs nothing. The folder is local to the host, so its pids are this host's."""
    directory = os.environ["PROMETHEUS_MULTIPROC_DIR"]
    pids = set()
    for name in os.listdir(directory):
        found = _LIVE_GAUGE_FILE.match(name)
        if found:
            pids.add(int(found.group(1)))
    for pid in pids:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            multiprocess.mark_process_dead(pid, directory)
        except PermissionError:  # alive, another user's
            pass


def reset(directory: str | os.PathLike) -> int:
    """Remove every process's files from the multiprocess folder (before the processes start).
    Returns how many were removed."""
    removed = 0
    for entry in os.scandir(directory):
        if entry.is_file() and entry.name.endswith(".db"):
            os.remove(entry.path)
            removed += 1
    return removed


# A process that exits normally runs this on its way out; forked Celery pool processes end without it
# and use the worker_process_shutdown signal instead; the scrape forgets the others.
atexit.register(lambda: mark_process_dead(os.getpid()))
