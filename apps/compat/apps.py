from django.apps import AppConfig


class CompatConfig(AppConfig):
    name = "apps.compat"
    label = "compat"
