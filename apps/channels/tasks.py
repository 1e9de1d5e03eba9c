"""Celery tasks of the channels app. (Operator messages to the channels are deliveries of the
webhook engine: its tasks send them.)"""

from celery import shared_task

from . import messengers


@shared_task(name="apps.channels.tasks.poll_telegram")
def poll_telegram() -> int:
    """Beat, in long-poll mode only: take the waiting updates of every live Telegram connection."""
    return messengers.poll_all_telegram()
