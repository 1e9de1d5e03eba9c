from django.apps import AppConfig


class ErasureConfig(AppConfig):
    name = "apps.erasure"
    label = "erasure"
    verbose_name = "erasure marks"
