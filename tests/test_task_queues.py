"""Which queue each task goes to and which Procfile process takes it: long work a tenant starts
(crawl slices, ingestion, translations, tuning, wish proposals) on `bulk`, never in front of the
webhook deliveries and event fan-out of the default queue."""

from __future__ import annotations

import shlex

import pytest

from config.celery import app
from tests.live import procfile

BULK = {
    "apps.kb.tasks.run_crawl",
    "apps.kb.tasks.ingest_document",
    "apps.ai.tasks.translate_widget_texts",
    "apps.learning.tasks.run_tuning_cycle",
    "apps.learning.tasks.propose_wish",
}
DELIVERIES = {
    "apps.webhooks.tasks.deliver_due",
    "apps.core.tasks.fan_out_batch",
    "apps.core.tasks.fan_out_event",
}


def queue_of(name: str) -> str:
    return app.amqp.router.route({}, name)["queue"].name


def consumed(entry: str) -> set[str]:
    argv = shlex.split(procfile(entry))
    return set(argv[argv.index("-Q") + 1].split(",")) if "-Q" in argv else {app.conf.task_default_queue}


@pytest.mark.parametrize("name", sorted(BULK))
def test_long_tenant_work_goes_to_the_bulk_queue(name):
    app.loader.import_default_modules()
    assert name in app.tasks
    assert queue_of(name) == "bulk"


@pytest.mark.parametrize("name", sorted(DELIVERIES))
def test_deliveries_and_fan_out_stay_on_the_default_queue(name):
    app.loader.import_default_modules()
    assert name in app.tasks
    assert queue_of(name) == "celery"


def test_the_procfile_runs_a_bulk_worker_and_the_worker_does_not_take_bulk_work():
    assert consumed("bulk") == {"bulk"}
    assert "bulk" not in consumed("worker") and "bulk" not in consumed("ai")
