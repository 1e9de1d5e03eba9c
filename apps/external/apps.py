from django.apps import AppConfig


class ExternalConfig(AppConfig):
    name = "apps.external"
    label = "external"
    verbose_name = "External operators"
