"""Celery tasks of data protection: ids in, call a service."""

from celery import shared_task

from . import services


@shared_task
def erase_contact_task(pending_id: int) -> dict | None:
    """Queued when an erasure is accepted; re-delivered by the broker if a worker dies mid-run."""
    return services.erase_contact(pending_id=pending_id)


@shared_task
def resume_erasures() -> int:
    """Every 10 minutes (config.celery): queue again erasures whose run was lost."""
    return services.resume_erasures()


@shared_task
def erase_expired_chats() -> dict:
    """Nightly (config.celery): erase chats past their widget's retention window."""
    return services.erase_expired_chats()
