"""Web Push's worker tasks: one push to one device (ids in, the row refetched), and the beat pass
that warns the assignee of an SLA clock about to breach."""

from __future__ import annotations

from celery import shared_task

from .models import PushSubscription


@shared_task(name="apps.push.tasks.send_push")
def send_push(subscription_id: int, data: dict) -> str:
    from . import send

    subscription = PushSubscription.objects.filter(pk=subscription_id).first()
    if subscription is None:  # removed meanwhile
        return "gone"
    return send.send(subscription, data)


@shared_task(name="apps.push.tasks.sla_warnings")
def sla_warnings() -> int:
    """Every 30 s: each running SLA clock that entered its warning window is marked warned (once)
    and its chat's assignee told."""
    from . import handlers

    return handlers.warn_sla_clocks()
