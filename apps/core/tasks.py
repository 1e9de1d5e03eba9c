"""Celery tasks of the core: ids in, call a service. Periodic ones are in config.celery."""

from __future__ import annotations

import time

from celery import shared_task

from apps.core import events, idempotency
from apps.core.models import RateLimitHit


@shared_task(acks_late=True)
def fan_out_event(event_id: str) -> bool:
    return events.fan_out(event_id)


@shared_task
def redrive_outbox() -> int:
    """Hand off again every event that never fanned out (lost message, killed worker)."""
    ids = events.pending_for_redrive()
    for event_id in ids:
        fan_out_event.delay(str(event_id))
    return len(ids)


@shared_task
def purge_idempotency_keys() -> int:
    return idempotency.purge_expired()


@shared_task
def purge_rate_limit_hits() -> int:
    # The longest database-backed window is one hour; a day keeps a wide margin.
    deleted, _ = RateLimitHit.objects.filter(at__lt=time.time() - 86400).delete()
    return deleted


@shared_task
def purge_signed_nonces() -> int:
    from apps.core import signed

    return signed.purge_nonces()
