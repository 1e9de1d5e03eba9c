"""Celery tasks of the support surface: ids in, a service does the work."""

from celery import shared_task

from . import services


@shared_task
def purge_support_audit() -> int:
    """Delete support actions older than 180 days (signed `request_id`s go with the idempotency keys)."""
    return services.purge_audit()
