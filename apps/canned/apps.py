from django.apps import AppConfig


class CannedConfig(AppConfig):
    name = "apps.canned"
    label = "canned"
    verbose_name = "Canned responses"
