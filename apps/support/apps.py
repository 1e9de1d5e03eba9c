from django.apps import AppConfig


class SupportConfig(AppConfig):
    name = "apps.support"
    label = "support"

    def ready(self):
        from apps.core import events

        from . import codes

        # In the message's transaction: a typed code's result commits with the message.
        events.subscribe(events.MESSAGE_CREATED, codes.on_client_message, phase=events.IN_TRANSACTION)
        events.subscribe(events.CHAT_CODE_REQUESTED, codes.on_code_requested, phase=events.IN_TRANSACTION)
