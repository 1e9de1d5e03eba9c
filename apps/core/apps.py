from django.apps import AppConfig
from django.db.models.signals import post_migrate


def prepare_broker(**kwargs) -> None:
    """After `migrate`: the embedded default's SQLite broker gets its tables before any process
    opens it (apps.core.broker.prepare_tables)."""
    from django.conf import settings

    from .broker import prepare_tables

    # the Procfile's queues: `celery` (the worker), `ai` (the ai worker) and `bulk` (the bulk worker)
    prepare_tables(settings.CELERY_BROKER_URL, queues=["celery", "ai", settings.BULK_QUEUE])


class CoreConfig(AppConfig):
    name = "apps.core"
    label = "core"

    def ready(self):
        post_migrate.connect(prepare_broker, sender=self, dispatch_uid="core.prepare_broker")
        # /metrics reports the depth and the oldest task of the long tenant work's queue too
        from django.conf import settings

        from . import metrics

        metrics.watch_queue(settings.BULK_QUEUE)
