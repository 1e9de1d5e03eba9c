"""Data protection: the chat retention setting of a widget, and stored bytes still to delete.

The erasure marks themselves live in apps.erasure (the bottom of the layers), where the chats app
can read them.
"""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from apps.core.models import Widget

RETENTION_MIN_DAYS = 30
RETENTION_MAX_DAYS = 3650


class RetentionPolicy(models.Model):
    """How long a widget keeps a chat after its last message. No row, or `chats_days` null, keeps
    chats for good."""

    widget = models.OneToOneField(Widget, on_delete=models.CASCADE, primary_key=True, related_name="retention")
    chats_days = models.PositiveIntegerField(null=True, blank=True)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name_plural = "retention policies"
        indexes = [
            models.Index(fields=["chats_days"], name="retention_active", condition=models.Q(chats_days__isnull=False))
        ]

    def __str__(self) -> str:
        return f"retention of widget {self.widget_id}: {self.chats_days or 'forever'}"


class StoredBytesDeletion(models.Model):
    """A stored file's name whose File row an erasure deleted: written in that deletion's
    transaction, its bytes are deleted from storage after the commit and the row then goes. A row
    left by a crash between the two is finished by the next erasure run (`services.drain_stored_bytes`)."""

    name = models.CharField(max_length=300)
    created_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return self.name
