"""Reads of mentions and of the operators a note can mention."""

from __future__ import annotations

from django.db.models import Case, IntegerField, QuerySet, Value, When

from apps.agents.models import Agent
from apps.core.models import Widget

from .models import Mention
from .parsing import display_name, names_of

# Unread first, then newest, the id breaking ties: the API's cursor ordering and the console's view.
ORDERING: tuple[str, ...] = ("read_rank", "-created_at", "-id")
_READ_RANK = Case(When(read_at__isnull=True, then=Value(0)), default=Value(1), output_field=IntegerField())


def mentionable_operators(widget: Widget) -> list[Agent]:
    """The widget's human operators a note can mention (a banned one is no operator any more; AI and
    external operators are never mentioned), by name."""
    return list(
        Agent.objects.filter(widget=widget, type=Agent.Type.HUMAN)
        .exclude(status=Agent.Status.BANNED)
        .order_by("name", "surname", "pk")
    )


def operator_names(widget: Widget) -> list[tuple[int, list[str]]]:
    """(id, names) of every mentionable operator, as apps.mentions.parsing reads them."""
    return [(agent.pk, names_of(agent.name, agent.surname)) for agent in mentionable_operators(widget)]


def picker_entries(widget: Widget) -> list[dict]:
    """What the console's `@` picker lists: `{id, name}`, `name` being what it inserts."""
    rows = [(agent.pk, display_name(agent.name, agent.surname)) for agent in mentionable_operators(widget)]
    return [{"id": pk, "name": name} for pk, name in rows if name]


def list_mentions(widget: Widget, *, agent_id: int | None = None, unread: bool | None = None) -> QuerySet[Mention]:
    """The widget's mentions with `read_rank` (0 unread, 1 read) for ORDERING, the note and both
    agents joined; `agent_id` keeps the mentions of that agent, `unread` the unread (True) or read
    (False) ones."""
    queryset = (
        Mention.objects.filter(widget=widget)
        .live()
        .select_related("message", "agent", "by_agent", "chat__contact")
        .annotate(read_rank=_READ_RANK)
    )
    if agent_id is not None:
        queryset = queryset.filter(agent_id=agent_id)
    if unread is not None:
        queryset = queryset.filter(read_at__isnull=unread)
    return queryset


def get_mention(widget: Widget, mention_id: int | None) -> Mention | None:
    if mention_id is None:
        return None
    return list_mentions(widget).filter(pk=mention_id).first()


def count_unread(*, widget: Widget, agent_id: int) -> int:
    return Mention.objects.filter(widget=widget, agent_id=agent_id, read_at__isnull=True).live().count()
