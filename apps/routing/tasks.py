"""Routing's worker tasks: the re-route and absence timers, and the beat pass that serves every
queue and finds what a lost timer left due (its work is proportional to what is due, never to the
open chats)."""

from __future__ import annotations

import logging

from celery import shared_task

from apps.core.models import Widget

from . import selectors, services

logger = logging.getLogger(__name__)


def _widget(widget_id: int) -> Widget | None:
    return Widget.objects.filter(pk=widget_id).first()


@shared_task(name="apps.routing.tasks.reroute_chat")
def reroute_chat(widget_id: int, chat_id: int) -> bool:
    widget = _widget(widget_id)
    if widget is None or not services.reroute(widget=widget, chat_id=chat_id):
        return False
    services.serve(widget)  # the operator who timed out has a free slot for the next chat waiting
    return True


@shared_task(name="apps.routing.tasks.settle_operator")
def settle_operator(widget_id: int, agent_id: int) -> int:
    widget = _widget(widget_id)
    return services.settle_absent(widget=widget, agent_id=agent_id) if widget else 0


@shared_task(name="apps.routing.tasks.tick")
def tick() -> dict:
    """The beat pass: absent operators past the grace, overdue re-routes, then every waiting queue."""
    done = {"released": 0, "rerouted": 0, "assigned": 0}
    for widget_id, agent_id in services.absent_operators():
        widget = _widget(widget_id)
        if widget is not None:
            done["released"] += services.settle_absent(widget=widget, agent_id=agent_id)
    for widget_id, chat_id in services.overdue_reroutes():
        widget = _widget(widget_id)
        if widget is not None and services.reroute(widget=widget, chat_id=chat_id):
            done["rerouted"] += 1
    for widget_id in selectors.queued_widget_ids():
        widget = _widget(widget_id)
        if widget is not None:
            done["assigned"] += services.serve(widget)
    return done


@shared_task(name="apps.routing.tasks.sla_breaches")
def sla_breaches() -> int:
    """The beat pass of the SLA timers: breach every running clock already due (read through the
    partial index `sla_clock_running`, so its work follows the breaches due, not the open chats)."""
    from . import sla

    return sla.breach_due()


@shared_task(name="apps.routing.tasks.sla_clock_due")
def sla_clock_due(clock_id: int) -> int:
    """One clock's countdown ran out: breach it if it is still running and due."""
    from . import sla

    return sla.breach_due(clock_id=clock_id)
