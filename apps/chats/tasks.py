"""Celery tasks of conversations: ids in, call a service."""

from celery import shared_task

from . import services
from .visitor import auth as visitor_auth


@shared_task
def sweep_idle_chats() -> dict:
    """Every 5 minutes (config.celery): expire idle rooms, re-activate recent ones."""
    return services.sweep_idle_chats()


@shared_task
def purge_visitor_sessions() -> int:
    """Hourly (config.celery): delete visitor sessions idle longer than VISITOR_SESSION_IDLE_DAYS."""
    return visitor_auth.purge_idle_sessions()
