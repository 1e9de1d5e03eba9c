"""Celery tasks of the audit log."""

from celery import shared_task

from . import services


@shared_task
def purge_audit_log() -> int:
    """Daily (config.celery): delete audit rows older than 365 days."""
    return services.purge_old_entries()
