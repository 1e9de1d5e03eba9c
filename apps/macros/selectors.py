"""Reads of macros. Who sees which: an API token stands for the widget's owner and reads every macro
of the widget, shared and personal alike (each personal one names its operator); an operator in the
console sees the shared macros and their own personal ones, never another operator's."""

from __future__ import annotations

from django.db.models import Q, QuerySet

from apps.agents.models import Agent
from apps.core.models import Widget

from .models import Macro


def visible_to(queryset: QuerySet[Macro], *, agent: Agent) -> QuerySet[Macro]:
    """The macros of `queryset` that `agent` (an operator) may see and run."""
    return queryset.filter(Q(agent__isnull=True) | Q(agent=agent))


def list_macros_for_agent(*, widget: Widget, agent: Agent) -> list[Macro]:
    """What one operator's picker lists: shared macros and their own, by name."""
    return list(visible_to(Macro.objects.filter(widget=widget), agent=agent).order_by("name", "pk"))


def get_macro_for_agent(*, widget: Widget, agent: Agent, macro_id: int) -> Macro | None:
    """A macro `agent` may run, or None (missing, another widget's and another operator's personal
    one alike)."""
    return visible_to(Macro.objects.filter(widget=widget, pk=macro_id), agent=agent).first()


def macro_payload(row: Macro) -> dict:
    return {
        "id": row.pk,
        "name": row.name,
        "visibility": row.visibility,
        "agent_id": row.agent_id,
        "actions": row.actions,
        "created_at": row.created_at.isoformat(),
        "updated_at": row.updated_at.isoformat(),
    }
