"""Reads of the chat page's context panel: who the visitor is, their earlier chats, the chat's
routing and its private notes. Each part is one statement, so the panel costs the same number of
queries whatever the contact holds. Every read is of the chat's widget, under a chat `get_chat`
found (live) for the agent."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime

from django.db.models import Count, F, Window

from apps.chats.models import Chat, ChatLabel, ContactTag, Label, Message, VisitorSession

from .selectors import SlaMark, queue_position_expression, sla_marks

# What the panel shows at most: the contact's tags, each attribute value cut to ATTRIBUTE_CHARS,
# the newest EARLIER_CHATS of the contact's other rooms and the newest NOTES private notes (with a
# count of the rest).
DETAIL_TAGS = 30
ATTRIBUTE_CHARS = 200
EARLIER_CHATS = 10
NOTES = 20


@dataclass(frozen=True)
class VisitorDetails:
    name: str
    email: str
    phone: str
    locale: str
    page_url: str  # the page the newest visitor session was opened on ("" when unknown)
    tags: list[str]
    attributes: list[tuple[str, str]]  # every key, its value as text (cut to ATTRIBUTE_CHARS)

    @property
    def page_link(self) -> bool:
        """Drawn as a link only when it is an http(s) address (the visitor API accepts no other)."""
        return self.page_url.lower().startswith(("http://", "https://"))


def visitor_details(*, chat: Chat) -> VisitorDetails:
    """The contact of `chat` (joined by `get_chat`): its fields, the page of its newest visitor
    session, its tags and custom attributes."""
    contact = chat.contact
    page_url = (
        VisitorSession.objects.filter(widget_id=chat.widget_id, contact_id=contact.pk)
        .exclude(page_url="")
        .order_by("-created_at", "-id")
        .values_list("page_url", flat=True)
        .first()
    )
    tags = list(
        ContactTag.objects.filter(widget_id=chat.widget_id, contact_id=contact.pk)
        .order_by("name")
        .values_list("name", flat=True)[:DETAIL_TAGS]
    )
    attributes = contact.attributes if isinstance(contact.attributes, dict) else {}
    return VisitorDetails(
        name=contact.name,
        email=contact.email,
        phone=contact.phone,
        locale=contact.locale,
        page_url=page_url or "",
        tags=tags,
        attributes=[(str(key), _attribute_text(value)) for key, value in attributes.items()],
    )


def _attribute_text(value) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= ATTRIBUTE_CHARS else text[: ATTRIBUTE_CHARS - 1] + "…"


@dataclass(frozen=True)
class Shown:
    """The first rows of a list and how many more there are."""

    rows: list
    more: int


def _shown(queryset, limit: int) -> Shown:
    """The first `limit` rows with the total counted by the same statement (a window count)."""
    rows = list(queryset.annotate(total=Window(Count("id")))[:limit])
    return Shown(rows=rows, more=rows[0].total - len(rows) if rows else 0)


def earlier_chats(*, chat: Chat) -> Shown:
    """The contact's other rooms (every channel), newest activity first, with their last message."""
    queryset = (
        Chat.objects.filter(widget_id=chat.widget_id, contact_id=chat.contact_id)
        .exclude(pk=chat.pk)
        .select_related("last_message")
        .order_by(F("last_message_at").desc(nulls_last=True), "-created_at", "-id")
    )
    return _shown(queryset, EARLIER_CHATS)


@dataclass(frozen=True)
class Routing:
    owner: str  # the routing owner's name ("" when nobody owns the chat)
    department: str
    handled_by: str  # the person's name, "" when nobody (handled_by_ai says the AI operator)
    handled_by_ai: bool
    accepted_by: str
    accepted_by_ai: bool
    accepted_at: datetime | None
    awaiting_human_since: datetime | None
    # apps.routing's row of the chat: when it began to wait for a person, since when it waits in
    # the queue now and its place there, who assigned it (`routing`, `agent`, `api`, `automation`;
    # "" before any assignment) and how often re-routing moved it.
    queued_at: datetime | None = None
    queue_since: datetime | None = None
    queue_position: int | None = None
    assigned_at: datetime | None = None
    assigned_by: str = ""
    reroutes: int = 0
    sla: SlaMark | None = None


def routing(*, chat: Chat) -> Routing:
    """Who owns, handles and accepted `chat`, its department, its wait for a person and its place in
    the routing queue, read fresh in one statement (the names of four related rows and the routing
    row); its SLA mark in another."""
    row = (
        Chat.objects.filter(widget_id=chat.widget_id, pk=chat.pk)
        .annotate(queue_position=queue_position_expression())
        .values(
            "agent__name",
            "department__name",
            "handled_by__name",
            "handled_by_type",
            "accepted_by__name",
            "accepted_by_type",
            "accepted_at",
            "awaiting_human_since",
            "routing__queued_at",
            "routing__queue_since",
            "routing__assigned_at",
            "routing__assigned_by",
            "routing__reroutes",
            "queue_position",
        )
        .first()
    ) or {}
    return Routing(
        owner=row.get("agent__name") or "",
        department=row.get("department__name") or "",
        handled_by=row.get("handled_by__name") or "",
        handled_by_ai=row.get("handled_by_type") == Chat.OperatorType.AI,
        accepted_by=row.get("accepted_by__name") or "",
        accepted_by_ai=row.get("accepted_by_type") == Chat.OperatorType.AI,
        accepted_at=row.get("accepted_at"),
        awaiting_human_since=row.get("awaiting_human_since"),
        queued_at=row.get("routing__queued_at"),
        queue_since=row.get("routing__queue_since"),
        queue_position=row.get("queue_position"),
        assigned_at=row.get("routing__assigned_at"),
        assigned_by=row.get("routing__assigned_by") or "",
        reroutes=row.get("routing__reroutes") or 0,
        sla=sla_marks([chat.pk]).get(chat.pk),
    )


def notes(*, chat: Chat) -> Shown:
    """The chat's private notes (visibility `note`), newest first, with their authors."""
    queryset = (
        Message.objects.filter(widget_id=chat.widget_id, chat_id=chat.pk, visibility=Message.Visibility.NOTE)
        .select_related("agent")
        .order_by("-created_at", "-id")
    )
    return _shown(queryset, NOTES)


@dataclass(frozen=True)
class ChatContext:
    visitor: VisitorDetails
    earlier: Shown
    routing: Routing
    notes: Shown


def chat_context(*, chat: Chat) -> ChatContext:
    """Everything the context panel of `chat` shows: six statements."""
    return ChatContext(
        visitor=visitor_details(chat=chat),
        earlier=earlier_chats(chat=chat),
        routing=routing(chat=chat),
        notes=notes(chat=chat),
    )


def chat_labels(*, chat: Chat) -> dict:
    """The chat's labels (chips) and the widget's labels each marked `on` when the chat carries it
    (the picker): two statements."""
    on = set(ChatLabel.objects.filter(chat_id=chat.pk, widget_id=chat.widget_id).values_list("label_id", flat=True))
    choices = list(Label.objects.filter(widget_id=chat.widget_id).order_by("key", "id"))
    for label in choices:
        label.on = label.pk in on
    return {"labels": [label for label in choices if label.on], "choices": choices}
