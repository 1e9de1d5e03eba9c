"""Reads of the audit log."""

from __future__ import annotations

from datetime import datetime

from django.db.models import QuerySet

from .models import AuditEntry


def list_entries(
    *, widget, action: str | None = None, start: datetime | None = None, end: datetime | None = None
) -> QuerySet[AuditEntry]:
    """The widget's rows, newest first; `start` inclusive, `end` exclusive."""
    queryset = AuditEntry.objects.filter(widget=widget)
    if action:
        queryset = queryset.filter(action=action)
    if start is not None:
        queryset = queryset.filter(at__gte=start)
    if end is not None:
        queryset = queryset.filter(at__lt=end)
    return queryset.order_by("-at", "-id")


def entry_payload(entry: AuditEntry) -> dict:
    return {
        "id": entry.pk,
        "at": entry.at.isoformat(),
        "actor": {"type": entry.actor_type, "id": entry.actor_id or None, "name": entry.actor_name},
        "action": entry.action,
        "target": {"type": entry.target_type, "id": entry.target_id or None},
        "changes": entry.changes,
    }
