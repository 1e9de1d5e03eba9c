from django.apps import AppConfig


class StatsConfig(AppConfig):
    name = "apps.stats"
    label = "stats"

    def ready(self):
        from . import facts, report_facts, routing_facts

        facts.register()
        routing_facts.register()
        report_facts.register()
