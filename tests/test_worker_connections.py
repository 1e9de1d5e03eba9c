"""A Celery worker that keeps its database connections across tasks (CELERY_DB_REUSE_MAX, the
Procfile's worker lines) checks a kept connection at the start of each task
(config.celery.check_kept_connections): a connection the server dropped between two tasks is
replaced by the next task's first query instead of failing it; without the reuse setting nothing is
checked (Celery closes the connection around every task then)."""

from __future__ import annotations

import pytest
from celery import signals
from django.db import connection

from tests.support.concurrency import direct_connection

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def _terminate(pid: int) -> None:
    with direct_connection() as other:
        other.execute("SELECT pg_terminate_backend(%s)", [pid])


def _backend_pid() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return cursor.fetchone()[0]


def test_a_connection_dropped_between_tasks_is_replaced_at_the_next_task(settings):
    # given a worker that keeps its connection, whose connection the server dropped after a task
    settings.CELERY_DB_REUSE_MAX = 1000
    first = _backend_pid()
    _terminate(first)

    # when the next task starts and makes its first query
    signals.task_prerun.send(sender=None, task_id="t2", task=None, args=(), kwargs={})
    second = _backend_pid()

    # then it ran on a new connection
    assert second != first


def test_without_reuse_nothing_is_checked(settings):
    # given a worker that does not keep connections (Celery closes them around each task)
    settings.CELERY_DB_REUSE_MAX = None
    _backend_pid()
    connection.health_check_done = True

    # when a task starts
    signals.task_prerun.send(sender=None, task_id="t3", task=None, args=(), kwargs={})

    # then the handler left the connection alone
    assert connection.health_check_done is True


def test_a_prefork_worker_started_with_the_webs_pool_setting_drops_the_pool(monkeypatch):
    # given a worker's settings with the web's pool in them (DB_POOL_MAX_SIZE in its environment)
    from types import SimpleNamespace

    from celery.concurrency.prefork import TaskPool as PreforkTaskPool

    import config.celery

    worker_settings = SimpleNamespace(
        DATABASES={"default": {"ENGINE": "django.db.backends.postgresql", "OPTIONS": {"pool": {"max_size": 10}}}}
    )
    monkeypatch.setattr(config.celery, "settings", worker_settings)

    # when the worker starts
    config.celery.no_connection_pool_in_prefork_workers(sender=SimpleNamespace(pool_cls=PreforkTaskPool))

    # then its connections are opened without the pool
    assert "pool" not in worker_settings.DATABASES["default"]["OPTIONS"]
    assert worker_settings.DATABASES["default"]["CONN_MAX_AGE"] == 0


def test_a_thread_pool_worker_keeps_the_pool_its_threads_share(monkeypatch):
    # given the `ai` worker's settings: a thread pool started with DB_POOL_MAX_SIZE
    from types import SimpleNamespace

    from celery.concurrency.thread import TaskPool as ThreadTaskPool

    import config.celery

    pool = {"max_size": 8}
    worker_settings = SimpleNamespace(
        DATABASES={"default": {"ENGINE": "django.db.backends.postgresql", "OPTIONS": {"pool": pool}}}
    )
    monkeypatch.setattr(config.celery, "settings", worker_settings)

    # when the worker starts
    config.celery.no_connection_pool_in_prefork_workers(sender=SimpleNamespace(pool_cls=ThreadTaskPool))

    # then its threads take their connections from the pool
    assert worker_settings.DATABASES["default"]["OPTIONS"]["pool"] is pool
