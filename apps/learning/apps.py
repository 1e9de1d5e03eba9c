from django.apps import AppConfig


class LearningConfig(AppConfig):
    name = "apps.learning"
    label = "learning"
    verbose_name = "Self-learning and improvement wishes"

    def ready(self) -> None:
        from apps.core import events

        from . import demand

        # A machine handed a chat to people: count what the visitor asked (apps.learning.demand).
        events.subscribe(events.CHAT_AWAITING_HUMAN, demand.on_awaiting_human, phase=events.IN_TRANSACTION)
