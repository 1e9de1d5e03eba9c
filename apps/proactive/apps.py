from django.apps import AppConfig


class ProactiveConfig(AppConfig):
    name = "apps.proactive"
    label = "proactive"
    verbose_name = "Proactive messages"
