from django.apps import AppConfig


class PushConfig(AppConfig):
    name = "apps.push"
    label = "push"
    verbose_name = "Web Push"

    def ready(self) -> None:
        from . import handlers

        handlers.register()
