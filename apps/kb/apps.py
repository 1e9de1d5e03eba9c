from django.apps import AppConfig


class KbConfig(AppConfig):
    name = "apps.kb"
    label = "kb"
    verbose_name = "Knowledge base"
