"""External-operator reads (tenant first)."""

from __future__ import annotations

from django.db.models import QuerySet

from apps.core.models import Widget
from apps.webhooks.models import Attempt, Delivery

from .models import ExternalOperator, Probe


def list_external_operators(*, widget: Widget) -> QuerySet[ExternalOperator]:
    """The widget's operators (soft-deleted ones never), newest first, with what the read shows."""
    return (
        ExternalOperator.objects.filter(widget=widget, deleted_at=None)
        .select_related("draining")
        .order_by("-created_at", "-id")
    )


def pending_drain(operator: ExternalOperator) -> int:
    if not operator.draining_id:
        return 0
    return Delivery.objects.filter(
        widget_id=operator.widget_id, endpoint_id=operator.draining_id, status=Delivery.Status.PENDING
    ).count()


def get_probe(*, widget: Widget, operator: ExternalOperator, public_id: str) -> Probe | None:
    return (
        Probe.objects.filter(widget=widget, operator=operator, public_id=public_id).select_related("delivery").first()
    )


def probe_attempts(probe: Probe) -> list[Attempt]:
    return list(Attempt.objects.filter(delivery_id=probe.delivery_id).order_by("number"))
