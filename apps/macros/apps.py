from django.apps import AppConfig


class MacrosConfig(AppConfig):
    name = "apps.macros"
    label = "macros"
    verbose_name = "Macros"
