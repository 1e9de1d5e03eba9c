"""Celery tasks of the core: ids in, call a service. Periodic ones are in config.celery."""

from __future__ import annotations

import time

from celery import shared_task

from apps.core import events, idempotency
from apps.core.models import RateLimitHit


@shared_task(acks_late=True)
def fan_out_batch(event_ids: list[str]) -> int:
    """The hand-off of one transaction's events (at most events.FAN_OUT_BATCH ids)."""
    return events.fan_out_many(event_ids)


@shared_task(acks_late=True)
def fan_out_event(event_id: str) -> bool:
    """One event's hand-off, as queued before hand-offs were batched (messages still in a broker
    queue at an upgrade are run, not lost)."""
    return events.fan_out(event_id)


@shared_task
def redrive_outbox() -> int:
    """Hand off again every event that never fanned out (lost message, killed worker), in batches
    of events.FAN_OUT_BATCH."""
    ids = [str(event_id) for event_id in events.pending_for_redrive()]
    for start in range(0, len(ids), events.FAN_OUT_BATCH):
        events.send_fan_out_batch(ids[start : start + events.FAN_OUT_BATCH])
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


@shared_task
def purge_broker_messages() -> int:
    """Delete taken messages from the embedded default's SQLite broker (nothing on Redis)."""
    from django.conf import settings

    from apps.platform.broker import purge_taken_messages

    return purge_taken_messages(settings.CELERY_BROKER_URL)


@shared_task
def purge_relayed_pushes() -> int:
    """Delete websocket frames relayed to the web process that are past keeping (embedded default)."""
    from apps.platform import realtime

    return realtime.purge_relayed_pushes()
