from django.apps import AppConfig


class RoutingConfig(AppConfig):
    name = "apps.routing"
    label = "routing"
    verbose_name = "Routing and SLAs"

    def ready(self) -> None:
        from . import handlers, positions, sla_handlers

        handlers.register()
        positions.register()  # the visitor's place in line
        sla_handlers.register()  # the SLA clocks
