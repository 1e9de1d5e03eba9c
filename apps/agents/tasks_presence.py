"""Celery task of operator presence: ids in, call a service. Scheduled in config.celery."""

from celery import shared_task

from . import presence


@shared_task
def reap_presence() -> int:
    """Every 30 seconds: agent.offline for agents whose sockets all expired (a web process died without
    closing them). Safe to overlap with itself and with disconnects: each transition is claimed once.
    On the embedded default the sockets live in the web process, which reaps itself; here it finds none."""
    return presence.reap_offline_agents()
