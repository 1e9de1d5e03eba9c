"""Reads of the audit log."""

from __future__ import annotations

from datetime import datetime

from django.db.models import QuerySet

from .models import AuditEntry


def list_entries(
    *,
    widget,
    action: str | None = None,
    start: datetime | None = None,
    end: datetime | None = None,
    actor_type: str | None = None,
    target_type: str | None = None,
) -> QuerySet[AuditEntry]:
    """The widget's rows, newest first; `start` inclusive, `end` exclusive. The widget leads every
    index of the table, so each filter narrows the widget's own rows."""
    queryset = AuditEntry.objects.filter(widget=widget)
    if action:
        queryset = queryset.filter(action=action)
    if actor_type:
        queryset = queryset.filter(actor_type=actor_type)
    if target_type:
        queryset = queryset.filter(target_type=target_type)
    if start is not None:
        queryset = queryset.filter(at__gte=start)
    if end is not None:
        queryset = queryset.filter(at__lt=end)
    return queryset.order_by("-at", "-id")


def list_target_types(*, widget) -> list[str]:
    """The kinds of object the widget's rows name, sorted (the console's filter offers them)."""
    return list(
        AuditEntry.objects.filter(widget=widget)
        .order_by("target_type")
        .values_list("target_type", flat=True)
        .distinct()
    )


def entry_payload(entry: AuditEntry) -> dict:
    return {
        "id": entry.pk,
        "at": entry.at.isoformat(),
        "actor": {"type": entry.actor_type, "id": entry.actor_id or None, "name": entry.actor_name},
        "action": entry.action,
        "target": {"type": entry.target_type, "id": entry.target_id or None},
        "changes": entry.changes,
    }
