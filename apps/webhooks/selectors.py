"""Reads on webhook deliveries that no tenant owns: the platform's own operations."""

from __future__ import annotations

from datetime import datetime

from django.db.models import Count, Min

from .models import Delivery


def get_pending_deliveries() -> tuple[int, datetime | None]:
    """Every widget's pending delivery rows together: (how many, created_at of the oldest). For
    /metrics only: it names no tenant."""
    found = Delivery.objects.filter(status=Delivery.Status.PENDING).aggregate(n=Count("id"), oldest=Min("created_at"))
    return found["n"], found["oldest"]
