"""Reads of the support surface, tenant first. Lists are built with a fixed number of queries."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db.models import Count, IntegerField, OuterRef, Prefetch, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from apps.chats.models import Chat, Message
from apps.core import crypto
from apps.core.links import emails_in
from apps.core.links import find_links as find_links
from apps.core.models import Widget

from .linkguard import GuardError as GuardError
from .linkguard import normalize_text as normalize_text
from .models import ChatAccount, Ticket

CHAT_LIST_MAX = 200
REPLY_AUTHORS = (Message.Author.AGENT, Message.Author.AI)


def _unanswered() -> Subquery:
    """Client messages after the last visible operator or AI message of the chat."""
    last_reply = Subquery(
        Message.objects.filter(chat=OuterRef(OuterRef("pk")), author_kind__in=REPLY_AUTHORS, visibility="public")
        .order_by("-id")
        .values("id")[:1]
    )
    counted = (
        Message.objects.filter(chat=OuterRef("pk"), author_kind=Message.Author.CLIENT)
        .filter(id__gt=Coalesce(last_reply, Value(0)))
        .order_by()
        .values("chat")
        .annotate(n=Count("id"))
        .values("n")[:1]
    )
    return Coalesce(Subquery(counted, output_field=IntegerField()), Value(0))


def support_chats(widget: Widget) -> QuerySet[Chat]:
    """Chats of `widget` with everything the support payload reads, in a fixed number of queries. A
    chat whose contact is under erasure is not among them (it reads as missing)."""
    return (
        Chat.objects.filter(widget=widget)
        .live()
        .select_related("contact", "last_message", "last_message__agent", "support_account", "support_claim")
        .prefetch_related(
            Prefetch(
                "support_tickets",
                queryset=Ticket.objects.filter(state=Ticket.State.OPEN).order_by("created_at"),
                to_attr="open_tickets",
            )
        )
        .annotate(unanswered_count=_unanswered())
    )


def list_support_chats(
    *,
    widget: Widget,
    updated_since: datetime,
    now: datetime,
    awaiting: str = "any",
    min_idle_sec: int = 180,
    channel: str | None = None,
    has_open_ticket: bool | None = None,
    limit: int = CHAT_LIST_MAX,
) -> list[Chat]:
    """Non-spam chats with messages updated since `updated_since`, idle at least `min_idle_sec`,
    oldest update first (the longest waiting first), at most `limit`."""
    qs = support_chats(widget).filter(updated_at__gte=updated_since, last_message__isnull=False)
    qs = qs.exclude(status=Chat.Status.SPAM)
    if min_idle_sec:
        qs = qs.filter(last_message_at__lte=now - timedelta(seconds=min_idle_sec))
    if channel:
        qs = qs.filter(channel=channel)
    if awaiting == "client":
        qs = qs.filter(last_message__author_kind=Message.Author.CLIENT)
    if has_open_ticket is not None:
        ids = Ticket.objects.filter(widget=widget, state=Ticket.State.OPEN).values("chat_id")
        qs = qs.filter(pk__in=ids) if has_open_ticket else qs.exclude(pk__in=ids)
    return list(qs.order_by("updated_at", "id")[:limit])


def get_support_chat(*, widget: Widget, chat_id: int | None) -> Chat | None:
    if chat_id is None:
        return None
    return support_chats(widget).filter(pk=chat_id).first()


def list_messages(
    *, chat: Chat, after_id: int | None, limit: int, include_system: bool, include_notes: bool
) -> list[Message]:
    qs = Message.objects.filter(chat=chat, widget_id=chat.widget_id).select_related("agent", "file")
    if after_id is not None:
        qs = qs.filter(id__gt=after_id)
    if not include_system:
        qs = qs.exclude(author_kind=Message.Author.SYSTEM)
    if not include_notes:
        qs = qs.filter(visibility=Message.Visibility.PUBLIC)
    return list(qs.order_by("id")[:limit])


def customer_addresses(*, chat: Chat) -> tuple[set[str], set[str]]:
    """The customer's own addresses from this chat: the contact's stored e-mail and phone, and any
    e-mail address the customer wrote in this chat's messages. Returns (emails, phones)."""
    emails, phones = set(), set()
    contact = chat.contact
    if contact.email:
        emails.add(contact.email.strip().lower())
    if contact.phone:
        phones.add("".join(ch for ch in contact.phone if ch.isdigit()))
    bodies = Message.objects.filter(chat=chat, author_kind=Message.Author.CLIENT, body__contains="@").values_list(
        "body", flat=True
    )
    for body in bodies:
        emails.update(emails_in(body))
    return emails, phones


def ticket_transcript(*, ticket, limit: int) -> list[Message]:
    """The ticket's opening: its first message and what followed, oldest first."""
    qs = Message.objects.filter(chat_id=ticket.chat_id, widget_id=ticket.widget_id, visibility="public")
    if ticket.opening_message_id:
        qs = qs.filter(id__gte=ticket.opening_message_id)
    return list(qs.select_related("agent", "file").order_by("id")[:limit])


def get_read_grant(*, widget: Widget, chat: Chat, now: datetime | None = None) -> str | None:
    """The assistant's read grant of the account bound to `chat` (the token the integrating backend
    handed to account-link), or None when no identity holds, the grant ran out (`regrant_needed`)
    or it was revoked. The only reader of the stored token; no endpoint returns it."""
    now = now or timezone.now()
    account = ChatAccount.objects.filter(widget=widget, chat=chat).first()
    if account is None or account.hidden_until_intake or account.link != ChatAccount.Link.VERIFIED:
        return None
    if account.identity_expires_at is None or account.identity_expires_at <= now:
        return None
    if account.grant_expires_at is None or account.grant_expires_at <= now:
        return None
    return crypto.decrypt_secret(account.grant_token_encrypted)
