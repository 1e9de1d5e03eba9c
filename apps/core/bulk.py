"""Long tenant-driven work (crawls, document ingestion, translations, tuning cycles) runs on the `bulk`
queue (CELERY_TASK_ROUTES), so it never waits in front of deliveries or AI answers, and each widget
holds at most BULK_WIDGET_SLOTS of the bulk worker's threads at once, so one owner's slow site or
large upload leaves the others theirs.

A bulk task runs its work inside `widget_turn(task, widget_id)`: it takes one of the widget's slots
(`ratelimit.Slots`, in the cache, so the cap counts across worker processes) or, when the widget's
slots are taken, hands the message back to the queue with `task.retry` BUSY_RETRY_SECONDS later
without running anything. A slot expires by itself SLOT_TTL_SECONDS after it was taken, should its
worker die meanwhile; a crawl works in slices well inside that.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from celery import Task
from django.conf import settings

from .ratelimit import Slots, SlotStoreUnavailable

BUSY_RETRY_SECONDS = 5
SLOT_TTL_SECONDS = 15 * 60  # an ingestion of the largest document, or one crawl slice, fits well inside


def slots() -> Slots:
    return Slots("bulk", settings.BULK_WIDGET_SLOTS, ttl=SLOT_TTL_SECONDS)


@contextmanager
def widget_turn(task: Task, widget_id: int) -> Iterator[None]:
    """The block runs in one of the widget's bulk slots; with none free (or no cache to count them)
    the task is retried later and the block does not run."""
    held = slots()
    try:
        slot = held.acquire(widget_id)
    except SlotStoreUnavailable:
        slot = None
    if slot is None:
        raise task.retry(countdown=BUSY_RETRY_SECONDS, max_retries=None)
    try:
        yield
    finally:
        held.release(slot)
