from django.apps import AppConfig


class PlatformConfig(AppConfig):
    """The machinery room. It imports no other app; the apps above reach it, never the reverse."""

    name = "apps.platform"
    label = "platform"
