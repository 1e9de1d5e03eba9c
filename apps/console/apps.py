from django.apps import AppConfig


class ConsoleConfig(AppConfig):
    """The operator console at /console/: server-rendered pages, htmx and the operator websocket."""

    name = "apps.console"
    label = "console"

    def ready(self):
        from . import realtime

        realtime.register()
