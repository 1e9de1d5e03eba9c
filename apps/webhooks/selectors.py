"""Reads on webhook deliveries that no tenant owns: the platform's own operations."""

from __future__ import annotations

from datetime import datetime

from django.db.models import Count, Min

from apps.core import ports

from .models import Delivery


def get_pending_deliveries() -> tuple[int, datetime | None]:
    """Every widget's pending delivery rows together, but those of endpoint kinds counted under a
    label of their own (the channels'): (how many, created_at of the oldest). For /metrics only: it
    names no tenant."""
    counted_apart = [owner for owner, kind in ports.providers(ports.ENDPOINT_KIND).items() if kind.metric != "webhook"]
    found = (
        Delivery.objects.filter(status=Delivery.Status.PENDING)
        .exclude(endpoint__owner__in=counted_apart)
        .aggregate(n=Count("id"), oldest=Min("created_at"))
    )
    return found["n"], found["oldest"]
