from django.apps import AppConfig


class AuditConfig(AppConfig):
    name = "apps.audit"
    label = "audit"
    verbose_name = "audit log"

    def ready(self):
        from . import tasks  # noqa: F401  (the beat job's task is registered by name)
