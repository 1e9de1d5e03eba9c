"""Celery tasks of webhooks: triggers only; the Delivery rows are the truth."""

from celery import shared_task

from . import retention, services


@shared_task(acks_late=True)
def deliver_due() -> int:
    return services.deliver_due()


@shared_task
def sweep_deliveries() -> bool:
    """Beat: re-drive deliveries whose trigger was lost or whose worker died (lease expired)."""
    if services.has_due():
        deliver_due.delay()
        return True
    return False


@shared_task
def purge_delivery_log() -> dict:
    """Nightly (config.celery): delete settled deliveries and dispatched outbox events older than
    WEBHOOK_DELIVERY_RETENTION_DAYS (apps.webhooks.retention)."""
    return retention.purge_delivery_log()
