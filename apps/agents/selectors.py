"""Reads on agents, departments, invitations and the agent event log. Tenant first."""

from __future__ import annotations

from collections.abc import Callable

from django.db.models import Prefetch, Q, QuerySet
from django.utils import timezone

from apps.core.models import Account, Widget

from . import events_log, presence
from .models import Agent, AgentEvent, Department, Invitation


def _live_presence(widget: Widget) -> set[int]:
    return presence.online_agent_ids(widget.pk)


def _no_cabinets(widget: Widget) -> set[int]:
    return set()


# Live websocket presence (not the stored status): `widget -> set of online agent ids`. A hook so
# tests can substitute it.
PRESENCE_SOURCE: Callable[[Widget], set[int]] = _live_presence

# Ad-marketplace cabinets of a widget (`av__<cabinet_id>` department channels). The messengers app
# replaces this hook with a callable `widget -> set of cabinet ids`; until then none exist, so every
# `av__` channel is refused like an unknown id.
AD_CABINET_SOURCE: Callable[[Widget], set[int]] = _no_cabinets


def online_agent_ids(widget: Widget) -> set[int]:
    return set(PRESENCE_SOURCE(widget))


def ad_cabinet_ids(widget: Widget) -> set[int]:
    return set(AD_CABINET_SOURCE(widget))


# --- agents ------------------------------------------------------------------------------------------


def find_department(widget: Widget, department_id: int) -> Department | None:
    return Department.objects.filter(widget=widget, pk=department_id).first()


def with_department_ids(queryset: QuerySet[Agent]) -> QuerySet[Agent]:
    """One extra query per page for every agent's department ids."""
    return queryset.prefetch_related(Prefetch("departments", queryset=Department.objects.only("id")))


def filter_agents(
    queryset: QuerySet[Agent],
    *,
    widget: Widget,
    online: bool | None = None,
    type: str | None = None,
    department: Department | None = None,
    status: str | None = None,
    online_ids: set[int] | None = None,
) -> QuerySet[Agent]:
    """The agent list: banned agents only when `status=banned` asks for them. `online_ids` is the
    presence snapshot the caller also renders `online` from (read here when not given)."""
    queryset = queryset.filter(widget=widget)
    if status is None:
        queryset = queryset.exclude(status=Agent.Status.BANNED)
    else:
        queryset = queryset.filter(status=status)
    if type is not None:
        queryset = queryset.filter(type=type)
    if department is not None:
        assert department.widget_id == widget.pk
        queryset = queryset.filter(departments=department)
    if online is not None:
        ids = online_agent_ids(widget) if online_ids is None else online_ids
        queryset = queryset.filter(pk__in=ids) if online else queryset.exclude(pk__in=ids)
    return queryset


def seats_used(account: Account) -> int:
    """Seats in use: every non-banned human agent of every widget of the account (AI and webhook
    operators use none)."""
    return (
        Agent.objects.filter(widget__account=account, type=Agent.Type.HUMAN).exclude(status=Agent.Status.BANNED).count()
    )


def outstanding_invitations(account: Account, *, now=None) -> int:
    return Invitation.objects.filter(
        widget__account=account,
        accepted_at__isnull=True,
        revoked_at__isnull=True,
        expires_at__gt=now or timezone.now(),
    ).count()


def free_seats(account: Account) -> int:
    return max(0, account.seats - seats_used(account))


# --- event log -------------------------------------------------------------------------------------------


def list_agent_events(*, widget: Widget, agent: Agent, type: str | None = None) -> QuerySet[AgentEvent]:
    """Events of one agent; `type` is a known slug or `unknown` (codes without a slug)."""
    assert agent.widget_id == widget.pk
    queryset = AgentEvent.objects.filter(widget=widget, agent=agent)
    if type == events_log.UNKNOWN:
        queryset = queryset.exclude(type_code__in=list(events_log.BY_CODE))
    elif type is not None:
        queryset = queryset.filter(type_code=events_log.code_of(type))
    return queryset


# --- invitations --------------------------------------------------------------------------------------


def find_invitation(token_hash: str) -> Invitation | None:
    return Invitation.objects.select_related("widget").filter(token_hash=token_hash).first()


# Larger integers name no row, and SQLite cannot even bind them in an IN list (exact lookups Django
# already answers with no rows; `__in` it does not).
MAX_ROW_ID = 2**63 - 1


def agents_of(widget: Widget, ids: list[int]) -> dict[int, Agent]:
    storable = [value for value in ids if -MAX_ROW_ID - 1 <= value <= MAX_ROW_ID]
    return {agent.pk: agent for agent in Agent.objects.filter(widget=widget, pk__in=storable)}


def with_agent_ids(queryset: QuerySet[Department]) -> QuerySet[Department]:
    """One extra query per page for every department's agent ids."""
    return queryset.prefetch_related(Prefetch("agents", queryset=Agent.objects.only("id")))


__all__ = [
    "AD_CABINET_SOURCE",
    "PRESENCE_SOURCE",
    "ad_cabinet_ids",
    "agents_of",
    "filter_agents",
    "is_operator",
    "find_department",
    "find_invitation",
    "free_seats",
    "list_agent_events",
    "online_agent_ids",
    "outstanding_invitations",
    "seats_used",
    "with_agent_ids",
    "with_department_ids",
]


def is_operator(widget: Widget, email: str) -> bool:
    """Whether `email` already belongs to a non-banned human agent of the widget."""
    return (
        Agent.objects.filter(widget=widget, type=Agent.Type.HUMAN)
        .exclude(status=Agent.Status.BANNED)
        .filter(Q(email__iexact=email) | Q(user__email__iexact=email))
        .exists()
    )


def get_agent(*, widget_id: int, agent_id: int | None) -> Agent | None:
    return Agent.objects.filter(widget_id=widget_id, pk=agent_id).first() if agent_id else None


# --- the widget header ---------------------------------------------------------------------------------


def list_header_operators(widget: Widget) -> list[Agent]:
    """Operators the widget header may show visitors: `show_in_header`, human or AI, not banned,
    oldest first. One query (index agent_widget_type); the public config caches what it builds from
    them, and every change of these fields emits agent.profile_changed, which purges it."""
    return list(
        Agent.objects.filter(widget=widget, show_in_header=True, type__in=[Agent.Type.HUMAN, Agent.Type.AI])
        .exclude(status=Agent.Status.BANNED)
        .only("id", "widget_id", "name", "avatar", "type", "status")
        .order_by("created_at", "pk")
    )


def header_presence(*, type: str, status: str, connected: bool) -> str:
    """`online`, `away` or `offline` as a visitor sees an operator. A person is online while a
    console socket of theirs is live and they have not switched to away (`relaxation`); with no live
    socket they are offline whatever they chose. An AI operator has no socket: it is online while
    active and away while paused."""
    if type == Agent.Type.AI:
        return "online" if status == Agent.Status.ACTIVE else "away"
    if not connected:
        return "offline"
    return "online" if status == Agent.Status.ACTIVE else "away"
