"""Celery tasks of the channels app: ids in (or none), call the sender."""

from celery import shared_task

from . import delivery, messengers


@shared_task(name="apps.channels.tasks.deliver_due", acks_late=True)
def deliver_due() -> int:
    return delivery.deliver_due()


@shared_task(name="apps.channels.tasks.sweep_deliveries")
def sweep_deliveries() -> bool:
    """Beat: re-drive due deliveries whose trigger was lost (or whose wait has passed)."""
    if delivery.has_due():
        delivery.trigger()
        return True
    return False


@shared_task(name="apps.channels.tasks.poll_telegram")
def poll_telegram() -> int:
    """Beat, in long-poll mode only: take the waiting updates of every live Telegram connection."""
    return messengers.poll_all_telegram()
