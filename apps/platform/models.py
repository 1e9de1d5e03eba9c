"""The machinery room's own rows."""

from __future__ import annotations

from django.db import models
from django.utils import timezone


class RelayedPush(models.Model):
    """A websocket frame written by a Celery worker of the embedded default, where the channel layer
    lives inside the web process: the web process reads these rows and sends them to its sockets
    (apps.platform.realtime). Never used with Redis, whose layer every process reaches directly."""

    groups = models.JSONField()
    frame = models.JSONField()
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        # the table the core app created for it: the model moved, the table stays
        db_table = "core_relayedpush"
