"""What the chat list adds when the widget routes chats: the Unassigned view as the routing queue
(positions, waiting times, the owner's Assign action) and each row's SLA mark. Read in a bounded
number of statements whatever the page holds: the settings, one statement for the page's SLA
clocks, one for its labels, one for the owner's assign targets."""

from __future__ import annotations

from apps.agents.models import Agent
from apps.chats import selectors as chat_selectors
from apps.chats.models import Chat

from . import selectors


def is_owner(agent: Agent) -> bool:
    return agent.role == Agent.Role.OWNER


def list_reads(agent: Agent, filters: selectors.ChatFilters) -> dict:
    """The list's rows (each with `sla`, its SLA mark or None) and counts, the queue's state and
    what the owner assigns from."""
    queue = selectors.routing_on(agent=agent)
    chats = selectors.list_chats(agent=agent, filters=filters, queue=queue)
    mark_sla(chats)
    chat_selectors.prefetch_chat_labels(chats)  # each row's label chips, one statement
    queue_view = queue and filters.view == selectors.VIEW_UNASSIGNED
    owner_assigns = queue_view and bool(chats) and is_owner(agent)
    return {
        "chats": chats,
        "counts": selectors.view_counts(agent=agent, queue=queue),
        "routing_on": queue,
        "queue_view": queue_view,
        "assign_targets": list(selectors.assign_targets(agent=agent)) if owner_assigns else [],
    }


def mark_sla(chats: list[Chat]) -> None:
    marks = selectors.sla_marks([chat.pk for chat in chats])
    for chat in chats:
        chat.sla = marks.get(chat.pk)
