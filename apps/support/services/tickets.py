"""Support writes: ticket changes through the support API (close, reopen)."""

from __future__ import annotations

from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from apps.chats import services as chat_services
from apps.chats.models import Chat
from apps.core.errors import Conflict, ValidationFailed
from apps.core.models import Widget

from ..errors import ChatClaimed
from ..models import Ticket
from .claims import _active_claim

# --- tickets (support API) ------------------------------------------------------------------------------

TICKET_REOPEN_WINDOW = timedelta(days=7)


class TicketClosed(Conflict):
    """The ticket is already closed."""

    code, title = "ticket_closed", "Ticket already closed"


class TicketOpen(Conflict):
    """The ticket is open; only a closed ticket can be reopened."""

    code, title = "ticket_open", "Ticket is open"


class ReopenWindowPassed(Conflict):
    """A ticket can be reopened within 7 days of closing only."""

    code, title = "reopen_window_passed", "Reopen window passed"


class AccountHasOpenTicket(Conflict):
    """The account already has an open ticket: one open ticket per account."""

    code, title = "account_has_open_ticket", "Account already has an open ticket"


def _lease_allows(chat: Chat, claim_id: str | None, now) -> None:
    lease = _active_claim(chat, now)
    if lease is not None and lease.claim_id != claim_id:
        raise ChatClaimed("The ticket's chat is leased by another claim.", held_by=lease.service_agent)


def _note(ticket: Ticket, *, note: str, service_agent: str, now, action: str) -> None:
    if note:
        entry = {"at": now.isoformat(), "by": service_agent, "action": action, "note": note}
        ticket.agent_notes = [*ticket.agent_notes, entry]


def check_close(
    *,
    widget: Widget,
    ticket: Ticket,
    reason: str,
    duplicate_of: int | None = None,
    claim_id: str | None = None,
    now=None,
) -> None:
    """The refusals of `close_ticket` for `ticket` as read (no lock, no write): Django admin's form
    asks it first, and `close_ticket` asks it again under its locks."""
    now = now or timezone.now()
    if ticket.state == Ticket.State.CLOSED:
        raise TicketClosed("The ticket is already closed.")
    _lease_allows(ticket.chat, claim_id, now)
    if reason == Ticket.Reason.DUPLICATE and duplicate_of is not None:
        if duplicate_of == ticket.number or not Ticket.objects.filter(widget=widget, number=duplicate_of).exists():
            raise ValidationFailed("Unknown ticket.", errors={"duplicate_of": ["No such other ticket."]})


def check_reopen(*, widget: Widget, ticket: Ticket, claim_id: str | None = None, now=None) -> None:
    """The refusals of `reopen_ticket` for `ticket` as read (no lock, no write), as `check_close`."""
    now = now or timezone.now()
    if ticket.state == Ticket.State.OPEN:
        raise TicketOpen("The ticket is open.")
    if ticket.closed_at is None or now - ticket.closed_at > TICKET_REOPEN_WINDOW:
        raise ReopenWindowPassed("A ticket can be reopened within 7 days of closing.")
    _lease_allows(ticket.chat, claim_id, now)
    if Ticket.objects.filter(widget=widget, app_user_id=ticket.app_user_id, state=Ticket.State.OPEN).exists():
        raise AccountHasOpenTicket("The account already has an open ticket.")


@transaction.atomic
def close_ticket(
    *,
    widget: Widget,
    ticket: Ticket,
    reason: str,
    service_agent: str,
    duplicate_of: int | None = None,
    claim_id: str | None = None,
    note: str = "",
) -> Ticket:
    """Close an open ticket with one of the four reasons. Locks the chat, then the ticket."""
    chat_services.lock_chat(widget=widget, chat=ticket.chat)
    ticket = Ticket.objects.select_for_update().get(pk=ticket.pk, widget=widget)
    now = timezone.now()
    check_close(widget=widget, ticket=ticket, reason=reason, duplicate_of=duplicate_of, claim_id=claim_id, now=now)
    ticket.state, ticket.reason, ticket.closed_at, ticket.updated_at = Ticket.State.CLOSED, reason, now, now
    ticket.held_for_owner = False
    ticket.duplicate_of = duplicate_of if reason == Ticket.Reason.DUPLICATE else None
    _note(ticket, note=note, service_agent=service_agent, now=now, action="close")
    ticket.save()
    return ticket


@transaction.atomic
def reopen_ticket(
    *, widget: Widget, ticket: Ticket, service_agent: str, claim_id: str | None = None, note: str = ""
) -> Ticket:
    """Reopen a ticket closed less than 7 days ago, same number; the account may hold one open
    ticket only."""
    chat_services.lock_chat(widget=widget, chat=ticket.chat)
    ticket = Ticket.objects.select_for_update().get(pk=ticket.pk, widget=widget)
    now = timezone.now()
    check_reopen(widget=widget, ticket=ticket, claim_id=claim_id, now=now)
    ticket.state, ticket.reason, ticket.closed_at, ticket.updated_at = Ticket.State.OPEN, "", None, now
    ticket.duplicate_of = None
    _note(ticket, note=note, service_agent=service_agent, now=now, action="reopen")
    ticket.save()
    return ticket
