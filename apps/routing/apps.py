from django.apps import AppConfig


class RoutingConfig(AppConfig):
    name = "apps.routing"
    label = "routing"
    verbose_name = "Routing and SLAs"

    def ready(self) -> None:
        from . import handlers

        handlers.register()
        from . import sla_handlers; sla_handlers.register()  # noqa: E702, I001  # fmt: skip
