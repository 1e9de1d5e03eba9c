from django.apps import AppConfig


class CompatConfig(AppConfig):
    name = "apps.compat"
    label = "compat"

    def ready(self):
        from apps.core import events, ports

        from .handlers import queue_client_message
        from .services import ENDPOINT_OWNER, ClientMessages

        events.subscribe(events.MESSAGE_CREATED, queue_client_message, phase=events.IN_TRANSACTION)
        ports.provide(ports.ENDPOINT_KIND, ClientMessages(), key=ENDPOINT_OWNER)
