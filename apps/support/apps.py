from django.apps import AppConfig


class SupportConfig(AppConfig):
    name = "apps.support"
    label = "support"
