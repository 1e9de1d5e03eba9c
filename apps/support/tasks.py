"""Celery tasks of the support surface: ids in, a service does the work."""

from celery import shared_task

from . import services


@shared_task
def purge_support_audit() -> int:
    """Delete support actions older than 180 days and signed `request_id`s older than 24 h."""
    return services.purge_audit() + services.purge_signed_requests()
