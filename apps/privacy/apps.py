from django.apps import AppConfig


class PrivacyConfig(AppConfig):
    name = "apps.privacy"
    label = "privacy"
    verbose_name = "data protection"

    def ready(self):
        from . import tasks  # noqa: F401  (registered by name for the beat schedule and on-commit queueing)
