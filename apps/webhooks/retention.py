"""How long the delivery log and the outbox keep their rows: the nightly job `webhooks.purge_delivery_log`.

A delivery that has settled (delivered, failed, skipped) and not changed for
WEBHOOK_DELIVERY_RETENTION_DAYS is deleted with its attempts; a pending one never is, however old. An
outbox event goes once it is dispatched, older than the same window, and no delivery refers to it.
"""

from __future__ import annotations

import logging
from collections import Counter
from datetime import datetime, timedelta

from django.conf import settings
from django.db import IntegrityError
from django.db.models import Exists, OuterRef, QuerySet
from django.utils import timezone

from apps.core.models import Widget
from apps.core.services import delete_in_batches, purge_dispatched_events

from .models import SETTLED, Delivery

logger = logging.getLogger(__name__)

BATCH = 5000


def retention_cutoff(now: datetime | None = None) -> datetime:
    """Settled deliveries last changed before this, and events dispatched before it, are past keeping."""
    return (now or timezone.now()) - timedelta(days=settings.WEBHOOK_DELIVERY_RETENTION_DAYS)


def expired_deliveries(*, widget_id: int, before: datetime) -> QuerySet[Delivery]:
    """The widget's settled deliveries last changed before `before`, but those a kept redelivery names
    as its original: the original goes once its copies have gone (deleting it first would null their
    `redelivery_of`, and two copies of one row would then both count as the event's automatic
    delivery, which the table allows once)."""
    # A row is created before it last changes, so `created_at` bounds the rows too, and the reads walk
    # the widget's index of creation times (delivery_widget_created) from its oldest row: no index of
    # their own for every settling write to keep.
    return Delivery.objects.filter(SETTLED, widget_id=widget_id, created_at__lt=before, updated_at__lt=before).exclude(
        Exists(Delivery.objects.filter(redelivery_of=OuterRef("pk")))
    )


def purge_delivery_log(*, now: datetime | None = None, batch_size: int = BATCH) -> dict[str, int]:
    """The nightly job, over every widget: the expired deliveries (with their attempts), then the outbox
    events left without a delivery, `batch_size` rows a transaction. Safe to run twice or at once with
    the engine: a row that settles or changes is newer than the cutoff. Logs counts only."""
    before = retention_cutoff(now)
    counts: Counter[str] = Counter(deliveries=0, outbox_events=0)
    for widget_id in Widget.objects.order_by("pk").values_list("pk", flat=True).iterator():
        try:
            counts["deliveries"] += delete_in_batches(
                expired_deliveries(widget_id=widget_id, before=before),
                batch_size=batch_size,
                order_by=("created_at", "pk"),
            )
        except IntegrityError:
            # A redelivery of a row of the batch committed between the batch's read and its delete: the
            # batch rolled back, and the next run keeps that row for its copy. The other widgets go on.
            logger.warning("retention: a batch of deliveries kept for the next run", extra={"widget_id": widget_id})
            counts["batches_deferred"] += 1
        counts["outbox_events"] += purge_dispatched_events(widget_id=widget_id, before=before, batch_size=batch_size)
    logger.info("retention: webhook delivery log purged", extra=dict(counts))
    return dict(counts)
