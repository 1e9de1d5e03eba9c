from django.apps import AppConfig


class AgentsConfig(AppConfig):
    name = "apps.agents"
    label = "agents"

    def ready(self):
        from . import handlers

        handlers.register()
