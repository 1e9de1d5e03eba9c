"""Reads of the Web Push subscriptions (tenant first)."""

from __future__ import annotations

from django.db.models import QuerySet

from apps.agents.models import Agent
from apps.core.models import Widget

from .models import KINDS, PushSubscription


def list_devices(widget: Widget, *, agent_id: int) -> QuerySet[PushSubscription]:
    """One operator's devices, oldest first (the Notifications section)."""
    return PushSubscription.objects.filter(widget=widget, agent_id=agent_id).order_by("created_at", "id")


def get_device(widget: Widget, *, agent_id: int, subscription_id: int) -> PushSubscription | None:
    """One of the operator's own devices; None for a missing or another operator's id."""
    return PushSubscription.objects.filter(widget=widget, agent_id=agent_id, pk=subscription_id).first()


def subscribers(widget: Widget, *, agent_ids: list[int], kind: str) -> list[PushSubscription]:
    """The devices of these agents that chose `kind`, their agents able to work (not banned)."""
    if kind not in KINDS:
        raise ValueError(f"unknown notification kind {kind!r}")
    return list(
        PushSubscription.objects.filter(
            widget=widget,
            agent_id__in=agent_ids,
            agent__type=Agent.Type.HUMAN,
            **{kind: True},
        )
        .exclude(agent__status=Agent.Status.BANNED)
        .order_by("id")
    )


def queue_watchers(widget: Widget) -> list[int]:
    """The widget's human operators told when a chat starts waiting: active, not away."""
    return list(
        Agent.objects.filter(widget=widget, type=Agent.Type.HUMAN, status=Agent.Status.ACTIVE).values_list(
            "pk", flat=True
        )
    )
