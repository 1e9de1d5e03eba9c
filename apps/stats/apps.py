from django.apps import AppConfig


class StatsConfig(AppConfig):
    name = "apps.stats"
    label = "stats"

    def ready(self):
        from . import facts, routing_facts

        facts.register()
        routing_facts.register()
