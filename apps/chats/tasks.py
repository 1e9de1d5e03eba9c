"""Celery tasks of conversations: ids in, call a service."""

from celery import shared_task

from . import services


@shared_task
def sweep_idle_chats() -> dict:
    """Every 5 minutes (config.celery): expire idle rooms, re-activate recent ones."""
    return services.sweep_idle_chats()
