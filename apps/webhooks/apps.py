from django.apps import AppConfig


class WebhooksConfig(AppConfig):
    name = "apps.webhooks"
    label = "webhooks"

    def ready(self):
        from apps.core import events

        from .services import fan_out_events

        events.subscribe_outbox(fan_out_events)
