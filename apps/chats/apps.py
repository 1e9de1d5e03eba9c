from django.apps import AppConfig
from django.db.backends.signals import connection_created


def _sqlite_unicode_lower(sender, connection, **kwargs):
    """SQLite's LOWER() and LIKE fold ASCII only; `q` search must fold Cyrillic too."""
    if connection.vendor == "sqlite":
        connection.connection.create_function("unicode_lower", 1, lambda s: s.lower() if s else s, deterministic=True)


class ChatsConfig(AppConfig):
    name = "apps.chats"
    label = "chats"

    def ready(self):
        connection_created.connect(_sqlite_unicode_lower, dispatch_uid="chats.sqlite_unicode_lower")

        from . import realtime

        realtime.register()
