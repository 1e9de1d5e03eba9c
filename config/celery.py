"""Celery application. Beat uses django-celery-beat's DatabaseScheduler, which writes the periodic
jobs below (`app.conf.beat_schedule`) into its tables when beat starts."""

import os
from logging.config import dictConfig

import environ
from celery import Celery, signals
from celery.signals import setup_logging
from django.conf import settings

from apps.platform.queue_depth import stamp_published_at

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")


app = Celery("chatwidget")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
app.autodiscover_tasks(["apps.agents"], related_name="tasks_presence")


@signals.worker_ready.connect
def tell_make_run(**kwargs) -> None:
    """`make run` prints its box once every worker is ready (scripts/run_banner.py), so the workers'
    start-up lines come before it: each worker leaves a file named by its pid in RUN_READY_DIR, which
    only `make run` sets."""
    ready_dir = os.environ.get("RUN_READY_DIR")
    if ready_dir:
        with open(os.path.join(ready_dir, str(os.getpid())), "w"):
            pass


@signals.worker_init.connect
def relay_pushes_to_web(**kwargs) -> None:
    """On the embedded default the channel layer lives in the web process: a worker's websocket
    pushes go there through the database (apps.platform.realtime). Set before the pool forks."""
    from apps.platform import realtime

    realtime.relay_to_web = realtime.relay_enabled()


@setup_logging.connect
def use_django_logging(**kwargs) -> None:
    """Worker and beat log through settings.LOGGING (JSON lines, credentials scrubbed) instead of
    Celery's own handlers, like the web process."""
    dictConfig(settings.LOGGING)


# name -> (task, every seconds). Kept here so ops read the whole schedule in one place.
BEAT_SCHEDULE = {
    "core.redrive_outbox": ("apps.core.tasks.redrive_outbox", 60),
    "core.purge_idempotency_keys": ("apps.core.tasks.purge_idempotency_keys", 3600),
    "core.purge_rate_limit_hits": ("apps.core.tasks.purge_rate_limit_hits", 600),
    "core.purge_signed_nonces": ("apps.core.tasks.purge_signed_nonces", 600),
    "core.purge_broker_messages": ("apps.core.tasks.purge_broker_messages", 600),
    "core.purge_relayed_pushes": ("apps.core.tasks.purge_relayed_pushes", 600),
    "chats.sweep_idle_chats": ("apps.chats.tasks.sweep_idle_chats", 300),
    "chats.purge_visitor_sessions": ("apps.chats.tasks.purge_visitor_sessions", 3600),
    "webhooks.sweep_deliveries": ("apps.webhooks.tasks.sweep_deliveries", 15),
    "webhooks.purge_delivery_log": ("apps.webhooks.tasks.purge_delivery_log", 86400),
    "agents.reap_presence": ("apps.agents.tasks_presence.reap_presence", 30),
    "routing.tick": ("apps.routing.tasks.tick", 10),
    "routing.sla_breaches": ("apps.routing.tasks.sla_breaches", 15),
    "push.sla_warnings": ("apps.push.tasks.sla_warnings", 30),
    "automation.trim_runs": ("apps.automation.tasks.trim_runs", 300),
    "support.purge_support_audit": ("apps.support.tasks.purge_support_audit", 3600),
    "external.finish_rotations": ("apps.external.tasks.finish_rotations", 60),
    "learning.queue_due_cycles": ("apps.learning.tasks.queue_due_cycles", 86400),
    "kb.queue_scheduled_crawls": ("apps.kb.tasks.queue_scheduled_crawls", 3600),
    "kb.sweep_stale_documents": ("apps.kb.tasks.sweep_stale_documents", 300),
    "ai.redrive_unanswered": ("apps.ai.tasks.redrive_unanswered", 30),
    "privacy.resume_erasures": ("apps.privacy.tasks.resume_erasures", 600),
    "privacy.erase_expired_chats": ("apps.privacy.tasks.erase_expired_chats", 86400),
    "audit.purge_audit_log": ("apps.audit.tasks.purge_audit_log", 86400),
}
# A deployment with no public address polls Telegram instead of a webhook (the same environment
# variables as settings.TELEGRAM_LONG_POLL / TELEGRAM_POLL_SECONDS: settings are not loaded yet here).
_env = environ.Env()
if _env.bool("TELEGRAM_LONG_POLL", default=False):
    BEAT_SCHEDULE["channels.poll_telegram"] = (
        "apps.channels.tasks.poll_telegram",
        _env.int("TELEGRAM_POLL_SECONDS", default=2),
    )
app.conf.beat_schedule = {
    name: {"task": task, "schedule": float(every)} for name, (task, every) in BEAT_SCHEDULE.items()
}


@signals.worker_process_init.connect
def leave_the_worker_process_group(**kwargs):
    """A pool process leaves the worker's process group, so a SIGTERM to the group (honcho stops
    `make run` that way) reaches the worker alone and means what it means there: a warm shutdown,
    in which the pool processes finish their task and exit when the worker closes the pool. Killed
    by the group signal instead, they took their task with them and the worker waited for its
    result until honcho killed it (or, standalone, for good)."""
    os.setpgid(0, 0)


@signals.task_prerun.connect
def check_kept_connections(**kwargs) -> None:
    """A worker that keeps its database connections across tasks (CELERY_DB_REUSE_MAX, set by the
    Procfile's worker lines: a connection per task costs a PostgreSQL backend start) checks a
    kept connection at the start of each task as Django does at the start of each request
    (CONN_HEALTH_CHECKS): the task's first query costs one extra empty round trip, and a connection
    the server dropped meanwhile (a restart) is replaced instead of failing every task until the reuse
    count runs out."""
    if not settings.CELERY_DB_REUSE_MAX:
        return
    from django.db import connections

    for connection in connections.all(initialized_only=True):
        connection.health_check_done = False


@signals.worker_init.connect
def no_connection_pool_in_prefork_workers(sender=None, **kwargs) -> None:
    """The connection pool (DB_POOL_MAX_SIZE) serves processes whose threads share connections: the
    web, and a thread-pool worker such as the Procfile's `ai`, whose threads give their connection
    back while they wait on a provider (apps.platform.connections). A prefork worker started with
    it in its environment drops it before its first connection: Celery closes a prefork child's
    pool around every task, so each task would open a new one. Prefork workers keep a connection
    per pool process instead (CELERY_DB_REUSE_MAX)."""
    if _runs_threads(sender):
        return
    database = settings.DATABASES["default"]
    if database.get("OPTIONS", {}).pop("pool", None) is not None:
        database["CONN_MAX_AGE"] = 0


def _runs_threads(worker) -> bool:
    pool_cls = getattr(worker, "pool_cls", None)
    return isinstance(pool_cls, type) and pool_cls.__module__ == "celery.concurrency.thread"


# Every task sent carries the moment it was sent: /metrics reads the oldest waiting one's age from the
# broker (apps.platform.queue_depth).
signals.before_task_publish.connect(stamp_published_at, dispatch_uid="core.stamp_published_at")


@signals.worker_process_shutdown.connect
@signals.worker_shutdown.connect
def forget_live_metrics(**kwargs) -> None:
    """A worker process that ends drops its live gauges from /metrics (apps.platform.metrics). Forked pool
    processes end without running atexit handlers, hence the signals."""
    from apps.platform import metrics  # here: prometheus-client must be imported after the settings

    metrics.mark_process_dead()


@signals.worker_ready.connect
def serve_metrics(**kwargs):
    """METRICS_PORT set (the image sets it): this worker's processes' counts on a port of its own, served
    by the main process once its pool runs (apps.platform.metrics_server). A container's web reads no
    files of the workers, so its /metrics would miss them. Answers the server, or None."""
    if not settings.METRICS_PORT:
        return None
    from apps.platform import metrics_server  # here: prometheus-client must be imported after the settings

    return metrics_server.serve(settings.METRICS_PORT)
