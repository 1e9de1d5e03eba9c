"""Fan-out's fast path (`send_new`): a fan-out's new rows attempted by its own process once its
transaction commits, leased by their delivery ids, with no trigger, task or load in between."""

from __future__ import annotations

import logging
import time

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from ..models import Delivery
from . import record, sweep
from .lease import LEASE, _move
from .run import _PoolRun, endpoint_share
from .send import _send

logger = logging.getLogger(__package__)  # the engine's one logger, named as its package

# Of one fan-out's new rows, at most this many are attempted by the fan-out's own process; the others
# are left to `deliver_due`. As many as a fan-out batch (events.FAN_OUT_BATCH) has events: at 64, a
# backlog of fan-out tasks held every batch's last 36 rows behind the whole queue of fan-outs (the
# worker's processes were busy with them), so they went out last, after all the others.
NEW_AT_ONCE = 100


def send_new(rows: list[Delivery], *, concurrency: int | None = None, max_seconds: float = 50.0) -> int:
    """Attempt fan-out's new rows (committed, subscriptions' rows, as fan-out built them) in this
    process now: the first NEW_AT_ONCE are leased by their delivery ids, with their subscription's
    current url and secret, and sent (inline when there is one, else in flight together, each endpoint
    under its share of it); `deliver_due` is triggered for the rest. A row another engine leased
    meanwhile, or whose subscription was deactivated, is left alone (the engine drops the latter).
    Returns the number of attempts made. Best effort: on any failure the rows not leased stay due
    and the leased ones come back after LEASE."""
    concurrency = concurrency or settings.WEBHOOK_CONCURRENCY
    try:
        rows = [row for row in rows if row.status == Delivery.Status.PENDING]
        if len(rows) > NEW_AT_ONCE:
            sweep.trigger()
        leased = _lease_new(rows[:NEW_AT_ONCE])
        if not leased:
            return 0
        if concurrency <= 1 or len(leased) == 1:
            for row in leased:
                record._record([_send(row)])
            return len(leased)
        run = _PoolRun(
            concurrency=concurrency,
            batch_size=NEW_AT_ONCE,
            per_endpoint=endpoint_share(concurrency),
            queue=[(row.pk, row.target_key) for row in leased],
            preloaded={row.pk: row for row in leased},
            leases=False,
        )
        return run.until(time.monotonic() + max_seconds)
    except Exception:
        logger.exception("sending new webhook deliveries failed; the engine will pick them up")
        sweep.trigger()
        return 0


def _lease_new(rows: list[Delivery]) -> list[Delivery]:
    """Lease the new rows still due (their pks set from the database, their subscriptions' url and
    secret refreshed), in one transaction. Only the delivery rows are locked: a fan-out that skipped
    every row whose subscription another fan-out held locked would leave them all to `deliver_due`."""
    if not rows:
        return []
    now = timezone.now()
    by_delivery_id = {row.delivery_id: row for row in rows}
    with transaction.atomic():
        found = list(
            Delivery.objects.select_for_update(skip_locked=True, of=("self",))  # not the subscription's row
            .filter(
                delivery_id__in=list(by_delivery_id),
                status=Delivery.Status.PENDING,
                next_attempt_at__lte=now,
                subscription__is_active=True,
            )
            .values_list("pk", "delivery_id", "subscription__url", "subscription__secret_encrypted")
        )
        _move(Delivery.objects.filter(pk__in=[pk for pk, *_ in found]), now)
    leased = []
    for pk, delivery_id, url, secret in found:
        row = by_delivery_id[delivery_id]
        row.pk = pk
        row.next_attempt_at = now + LEASE
        row.subscription.url, row.subscription.secret_encrypted = url, secret
        leased.append(row)
    leased.sort(key=lambda row: row.pk)
    return leased
