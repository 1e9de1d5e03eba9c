"""Celery tasks of the compat app: ids in, call a service."""

from celery import shared_task

from . import services


@shared_task(name="apps.compat.tasks.send_client_message")
def send_client_message(delivery_id: int) -> str:
    return services.send_client_message(delivery_id)
