from django.apps import AppConfig


class MentionsConfig(AppConfig):
    name = "apps.mentions"
    label = "mentions"
    verbose_name = "Mentions"

    def ready(self) -> None:
        from . import handlers

        handlers.register()
