from django.apps import AppConfig


class WebhooksConfig(AppConfig):
    name = "apps.webhooks"
    label = "webhooks"

    def ready(self):
        from apps.core import events

        # Registers the Celery tasks in every process: the engine enqueues deliver_due by name.
        from . import tasks  # noqa: F401
        from .services import fan_out_events

        events.subscribe_outbox(fan_out_events)

        from apps.platform import metrics

        from . import selectors

        metrics.read_deliveries("webhook", selectors.get_pending_deliveries)
