from django.apps import AppConfig


class RoutingConfig(AppConfig):
    name = "apps.routing"
    label = "routing"
    verbose_name = "Routing and SLAs"

    def ready(self) -> None:
        from . import handlers

        handlers.register()
        from . import positions

        positions.register()  # the visitor's place in line
