from django.apps import AppConfig
from django.contrib.admin import apps as admin_apps
from django.db.models.signals import post_migrate


def prepare_broker(**kwargs) -> None:
    """After `migrate`: the embedded default's SQLite broker gets its tables before any process
    opens it (apps.platform.broker.prepare_tables)."""
    from django.conf import settings

    from apps.platform.broker import prepare_tables

    # the Procfile's queues: `celery` (the worker), `ai` (the ai worker) and `bulk` (the bulk worker)
    prepare_tables(settings.CELERY_BROKER_URL, queues=["celery", "ai", settings.BULK_QUEUE])


class CoreConfig(AppConfig):
    name = "apps.core"
    label = "core"

    def ready(self):
        post_migrate.connect(prepare_broker, sender=self, dispatch_uid="core.prepare_broker")
        # /metrics reports the depth and the oldest task of the long tenant work's queue too
        from django.conf import settings

        from apps.platform import metrics

        metrics.watch_queue(settings.BULK_QUEUE)


class AdminConfig(admin_apps.AdminConfig):
    """Django's admin with the site of apps.core.admin_site (its sign-in rate limited); named in
    INSTALLED_APPS in place of django.contrib.admin."""

    default = False  # "apps.core" in INSTALLED_APPS still means CoreConfig
    default_site = "apps.core.admin_site.AdminSite"
