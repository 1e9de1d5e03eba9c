from django.apps import AppConfig


class AutomationConfig(AppConfig):
    name = "apps.automation"
    label = "automation"
    verbose_name = "Automation rules"

    def ready(self) -> None:
        from apps.core.events import IN_TRANSACTION, subscribe

        from . import handlers

        subscribe(handlers.EVENTS, handlers.hand_off, phase=IN_TRANSACTION)
