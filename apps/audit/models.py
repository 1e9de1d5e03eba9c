"""The audit log: who changed what in a widget's configuration, credentials and data.

The lowest app of the layers (every auditing app, the core's token issuing included, imports
`apps.audit.services.record`), so it imports no other app: the widget is a lazy reference.
"""

from __future__ import annotations

from django.db import models
from django.utils import timezone


class AuditEntry(models.Model):
    """One audited write, recorded in the transaction of the write. Never edited."""

    class ActorType(models.TextChoices):
        TOKEN = "token"  # noqa: S105 (an actor kind, not a credential)
        AGENT = "agent"
        STAFF = "staff"
        SYSTEM = "system"

    widget = models.ForeignKey("core.Widget", on_delete=models.CASCADE, related_name="+", db_index=False)
    at = models.DateTimeField(default=timezone.now)
    actor_type = models.CharField(max_length=8, choices=ActorType.choices)
    actor_id = models.CharField(max_length=64, blank=True, default="")
    actor_name = models.CharField(max_length=200, blank=True, default="")
    action = models.CharField(max_length=64)
    target_type = models.CharField(max_length=64)
    target_id = models.CharField(max_length=64, blank=True, default="")
    # {field: {"from": old, "to": new}}; secret fields hold "[hidden]" on both sides.
    changes = models.JSONField(default=dict, blank=True)

    class Meta:
        verbose_name_plural = "audit entries"
        indexes = [
            models.Index(fields=["widget", "-at", "-id"], name="audit_widget_at"),
            models.Index(fields=["widget", "action", "-at", "-id"], name="audit_widget_action_at"),
            models.Index(fields=["at"], name="audit_at"),
        ]

    def __str__(self) -> str:
        return f"{self.action} by {self.actor_type} {self.actor_name or self.actor_id} (widget {self.widget_id})"
