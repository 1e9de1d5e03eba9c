"""What drives the engine: `trigger` asks a worker for a `deliver_due` run; the beat sweeper
(apps.webhooks.tasks) asks for one while `has_due`, so a lost trigger or a killed worker only delays
a row."""

from __future__ import annotations

import logging

from celery import current_app
from django.utils import timezone

from ..models import Delivery

logger = logging.getLogger(__package__)  # the engine's one logger, named as its package

DELIVER_TASK = "apps.webhooks.tasks.deliver_due"


def trigger(countdown: float | None = None) -> None:
    """Ask a worker to run `deliver_due` (now, or after `countdown` seconds). The task is looked up
    by its registered name (apps.webhooks.tasks calls this module). Best effort: the sweeper
    re-drives due rows, so a lost trigger only delays them."""
    try:
        task = current_app.tasks[DELIVER_TASK]
        if countdown:
            task.apply_async(countdown=countdown)
        else:
            task.delay()
    except Exception:
        logger.warning("webhook delivery trigger failed; the sweeper will pick the rows up")


def has_due() -> bool:
    return Delivery.objects.filter(status=Delivery.Status.PENDING, next_attempt_at__lte=timezone.now()).exists()
