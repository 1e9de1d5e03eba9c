"""apps.core.bulk: one widget holds at most BULK_WIDGET_SLOTS bulk threads; a task of a widget at its
cap is handed back to the queue without running, and the slot is freed whatever the work did."""

from __future__ import annotations

import pytest
from celery.exceptions import Retry

from apps.core import bulk
from apps.kb import tasks as kb_tasks
from apps.kb.models import KbDocument
from tests.support.factories import WidgetFactory

pytestmark = pytest.mark.django_db


class FakeTask:
    """What widget_turn uses of a bound Celery task: `retry`, which raises Retry as Celery's does."""

    def __init__(self):
        self.retries: list[dict] = []

    def retry(self, **kwargs):
        self.retries.append(kwargs)
        return Retry("busy", when=kwargs.get("countdown"))


def test_a_widget_at_its_cap_is_retried_later_and_runs_nothing(settings):
    settings.BULK_WIDGET_SLOTS = 1
    widget, other = WidgetFactory(), WidgetFactory()
    task, ran = FakeTask(), []
    with bulk.widget_turn(task, widget.pk):
        with pytest.raises(Retry):
            with bulk.widget_turn(task, widget.pk):
                ran.append("second of the same widget")
        with bulk.widget_turn(task, other.pk):
            ran.append("another widget")
    assert ran == ["another widget"]
    assert task.retries == [{"countdown": bulk.BUSY_RETRY_SECONDS, "max_retries": None}]


def test_the_slot_is_freed_after_a_failure(settings):
    settings.BULK_WIDGET_SLOTS = 1
    widget, task = WidgetFactory(), FakeTask()
    with pytest.raises(RuntimeError):
        with bulk.widget_turn(task, widget.pk):
            raise RuntimeError("the work failed")
    with bulk.widget_turn(task, widget.pk):
        pass
    assert task.retries == []


def test_an_ingestion_of_a_widget_at_its_cap_goes_back_to_the_queue(settings, monkeypatch):
    settings.BULK_WIDGET_SLOTS = 1
    widget = WidgetFactory()
    document = KbDocument.objects.create(widget=widget, name="faq.txt", format="txt", size=3, sha256="0" * 64)
    ingested = []
    monkeypatch.setattr(kb_tasks.services, "ingest_document", lambda *, document_id: ingested.append(document_id))
    held = bulk.slots()
    slot = held.acquire(widget.pk)
    with pytest.raises(Retry):
        kb_tasks.ingest_document.apply(args=[document.pk], throw=True)
    assert ingested == []
    held.release(slot)
    kb_tasks.ingest_document.apply(args=[document.pk], throw=True)
    assert ingested == [document.pk]
