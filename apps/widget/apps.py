from django.apps import AppConfig


class WidgetConfig(AppConfig):
    name = "apps.widget"
    label = "widget"

    def ready(self):
        from . import handlers

        handlers.register()
