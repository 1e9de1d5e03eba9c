from django.apps import AppConfig
from django.db.backends.signals import connection_created


class CoreConfig(AppConfig):
    name = "apps.core"
    label = "core"

    def ready(self):
        from .auth import token_cache
        from .dbtypes import use_c_timestamptz_loader

        token_cache.connect()

        connection_created.connect(use_c_timestamptz_loader, dispatch_uid="core.c_timestamptz_loader")
