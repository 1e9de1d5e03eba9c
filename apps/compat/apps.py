from django.apps import AppConfig


class CompatConfig(AppConfig):
    name = "apps.compat"
    label = "compat"

    def ready(self):
        from apps.core import events

        from . import tasks  # noqa: F401 (registers the Celery task in every process)
        from .handlers import queue_client_message

        events.subscribe(events.MESSAGE_CREATED, queue_client_message, phase=events.IN_TRANSACTION)
