"""What the chat list adds when the widget routes chats: the Unassigned view as the routing queue
(positions, waiting times, the owner's Assign action) and each row's SLA mark. Read in a bounded
number of statements whatever the page holds: the settings, one statement for the page's SLA
clocks, one for its labels, one for the owner's assign targets."""

from __future__ import annotations

from datetime import date
from urllib.parse import quote_plus, urlencode

from django.urls import reverse
from django.utils.translation import gettext as _

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


# --- the reports' drill-down --------------------------------------------------------------------------


def chat_list_url(**filters) -> str:
    """The chat list's URL showing the chats a figure of the reports counts. Keys: the list's
    query parameters (`from`, `to` as dates or ISO text, `channel`, `agent_id`, `rating`,
    `handling`, and `view`, `status`, `q`); `date_from` / `date_to` name `from` / `to` too. Every
    status and the view "All" unless given, since a report counts closed chats as well."""
    return chat_list_links()(**filters)


def chat_list_links():
    """`chat_list_url` for many figures of one page: the list's path is resolved once, not for each
    of the page's links (a report has more than a thousand: every cell of its tables and charts)."""
    path = reverse("console:chats")
    # The same few names and values (a day, a channel, an operator's id) recur across the page's
    # links, and the same link across its charts and tables: each value is quoted once, each link
    # built once, and joined as `urlencode` joins it.
    quoted: dict[str, str] = {}
    built: dict[tuple, str] = {}

    def quote(text: str) -> str:
        found = quoted.get(text)
        if found is None:
            found = quoted[text] = quote_plus(text)
        return found

    def link(**filters) -> str:
        key = tuple(filters.items())
        found = built.get(key)
        if found is not None:
            return found
        params = {"view": selectors.VIEW_ALL, "status": selectors.ANY_STATUS}
        for name, value in filters.items():
            if value is None or value == "":
                continue
            param = selectors.PARAM_NAMES.get(name, name)
            params[param] = value.isoformat() if isinstance(value, date) else str(value)
        found = built[key] = path + "?" + "&".join(f"{quote(name)}={quote(value)}" for name, value in params.items())
        return found

    return link


def filter_chips(agent: Agent, filters: selectors.ChatFilters) -> list[dict]:
    """The drill-down filters in force as removable chips: {label, value, remove} with `remove`
    the list's query without that filter (one statement for the operator's name, at most)."""
    handling = {
        "ai": _("AI"),
        "human": _("Human"),
        "ai_to_human": _("AI to human"),
        "human_to_ai": _("Human to AI"),
        "missed": _("Missed"),
    }
    shown = []
    if filters.date_from is not None:
        shown.append(("date_from", _("From"), filters.date_from.isoformat()))
    if filters.date_to is not None:
        shown.append(("date_to", _("To"), filters.date_to.isoformat()))
    if filters.agent_id is not None:
        named = selectors.drill_down_agent(agent=agent, filters=filters)
        shown.append(("agent_id", _("Operator"), named.name if named else f"#{filters.agent_id}"))
    if filters.rating is not None:
        shown.append(("rating", _("Rating"), str(filters.rating)))
    if filters.handling:
        shown.append(("handling", _("Handling"), str(handling[filters.handling])))
    chips = []
    for attribute, label, value in shown:
        param = selectors.PARAM_NAMES.get(attribute, attribute)
        kept = [(k, v) for k, v in filters.params() if k != param]
        raw = dict(filters.params())[param]
        chips.append({"label": label, "value": value, "param": param, "raw": raw, "remove": urlencode(kept)})
    return chips
