"""Writes of the support surface: claims (leases), replies, ticket changes, and the audit.

Every write locks the chat row (`chats.services.lock_chat`) inside its transaction, so a claim, a
release and a reply of one chat serialise: of two racing claims one wins, and a reply re-reads the
lease and the last message under the lock (no double send, no reply past a newer message).
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from apps.agents.models import Agent
from apps.chats import services as chat_services
from apps.chats.models import Chat, Message
from apps.core import idempotency
from apps.core.errors import Conflict, ValidationFailed
from apps.core.models import ApiToken, IdempotencyKey, Widget
from apps.core.ratelimit import Budget
from apps.webhooks import services as webhooks

from . import config as support_config
from . import linkguard, selectors
from .errors import (
    ChannelUnsupported,
    ChatChanged,
    ChatClaimed,
    ChatUnavailable,
    ClaimMismatch,
    RoomReplyLimit,
    SupportRateLimited,
)
from .models import (
    SUPPORT_REPLY_ORIGIN,
    ChatAccount,
    SupportAction,
    SupportClaim,
    SupportConfig,
    Ticket,
)
from .payloads import delivery_of

CLAIM_TTL_DEFAULT = 300
CLAIM_TTL_MIN, CLAIM_TTL_MAX = 60, 1800
AUDIT_RETENTION = timedelta(days=180)
TICKET_REOPEN_WINDOW = timedelta(days=7)


def text_digest(text: str) -> tuple[str, int]:
    """What the audit keeps of a text: its SHA-256 and its length, never the text."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest(), len(text)


# --- claims -------------------------------------------------------------------------------------------


def _active_claim(chat: Chat, now) -> SupportClaim | None:
    claim = SupportClaim.objects.filter(chat=chat).first()
    return claim if claim is not None and claim.is_active(now) else None


@transaction.atomic
def claim_chat(
    *,
    widget: Widget,
    chat: Chat,
    token: ApiToken,
    service_agent: str,
    ttl_sec: int = CLAIM_TTL_DEFAULT,
    claim_id: str | None = None,
    note: str = "",
) -> SupportClaim:
    """Lease `chat` for `ttl_sec` seconds. The holder's own `claim_id` renews its lease; a chat
    leased by another claim is 409 `chat_claimed`. Locks the chat row."""
    chat = chat_services.lock_chat(widget=widget, chat=chat)
    now = timezone.now()
    current = SupportClaim.objects.filter(chat=chat).first()
    if current is not None and current.is_active(now) and current.claim_id != claim_id:
        raise ChatClaimed(
            "The chat is leased by another claim.",
            held_by=current.service_agent,
            expires_at=current.expires_at.isoformat(),
        )
    if current is None:
        current = SupportClaim(widget=widget, chat=chat)
    elif not current.is_active(now) or current.claim_id != claim_id:
        current.claimed_at = now
    current.claim_id = claim_id or secrets.token_hex(16)
    current.token = token
    current.service_agent = service_agent
    current.note = note
    current.expires_at = now + timedelta(seconds=ttl_sec)
    current.released_at = None
    if current.pk is None:
        current.claimed_at = now
    current.save()
    return current


@transaction.atomic
def release_chat(*, widget: Widget, chat: Chat, claim_id: str) -> SupportClaim:
    """End the lease named by `claim_id`; any other id (or no active lease) is 409 `claim_mismatch`."""
    chat = chat_services.lock_chat(widget=widget, chat=chat)
    now = timezone.now()
    current = _active_claim(chat, now)
    if current is None or current.claim_id != claim_id:
        raise ClaimMismatch("This claim id does not hold the chat.")
    current.released_at = now
    current.save(update_fields=["released_at"])
    return current


# --- replies ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ReplyInput:
    text: str
    expected_last_message_id: int | None
    ticket: int | None = None
    close_ticket: bool = True
    claim_id: str | None = None
    note: str = ""


@dataclass(frozen=True)
class ReplyResult:
    message: Message
    chat: Chat
    delivery: str
    ticket_effect: dict


def prepare_text(raw: str) -> str:
    """Rule 2: the normalised text, checked. What is returned is what is checked, sent, stored."""
    text = linkguard.normalize_text(raw)
    linkguard.check_plain_text(text)
    return text


def _check_limits(*, config: SupportConfig, chat: Chat, token: ApiToken) -> None:
    """Per-chat then per-token reply limits (429 with Retry-After). Consumed last, after every other
    check, so a refused reply spends no budget."""
    room = support_config.room_limit(config)
    Budget("support_room_reply", room.count, room.window_sec).check(
        chat.widget_id,
        chat.pk,
        detail=f"At most {room.count} support replies per {room.window_sec} s in one chat.",
        error=RoomReplyLimit,
    )
    limits = support_config.token_limit(config)
    if limits.per_10_min:
        Budget("support_token_reply_10m", limits.per_10_min, 600).check(
            token.pk,
            detail=f"At most {limits.per_10_min} support replies per 10 minutes for this token.",
            error=SupportRateLimited,
        )
    if limits.per_day:
        Budget("support_token_reply_day", limits.per_day, 86400).check(
            token.pk,
            detail=f"At most {limits.per_day} support replies per day for this token.",
            error=SupportRateLimited,
        )


@transaction.atomic
def send_reply(
    *, widget: Widget, chat: Chat, config: SupportConfig, operator: Agent, token: ApiToken, data: ReplyInput
) -> ReplyResult:
    """Send `data.text` into `chat` as the configured human support operator, exactly as an
    operator-console reply (chats.services.post_agent_message), marked with SUPPORT_REPLY_ORIGIN.

    Order: text rules (422) -> chat lock -> unavailable (409) -> channel (409) -> lease (409) ->
    links (422, needs the chat's customer addresses) -> expected last message (409) -> ticket -> limits
    (429) -> store. Runs in the caller's idempotency transaction.
    """
    text = prepare_text(data.text)
    chat = chat_services.lock_chat(widget=widget, chat=chat, related=chat_services.AGENT_MESSAGE_RELATED)
    if chat.status == Chat.Status.SPAM or not chat.has_client_messages:
        raise ChatUnavailable("The chat server would drop a reply to this chat (spam, or no client).")
    if chat.channel not in (config.channels or []):
        raise ChannelUnsupported(
            f"Support replies go only to {', '.join(config.channels) or 'no channel'}; this chat is on {chat.channel}."
        )
    now = timezone.now()
    lease = _active_claim(chat, now)
    if lease is not None and lease.claim_id != data.claim_id:
        raise ChatClaimed("The chat is leased by another claim.", held_by=lease.service_agent)
    emails, phones = selectors.customer_addresses(chat=chat)
    linkguard.check_links(text, linkguard.Catalogue.from_config(config, customer_emails=emails, customer_phones=phones))
    if chat.last_message_id is not None and chat.last_message_id != data.expected_last_message_id:
        raise ChatChanged(
            "The chat has a newer message than expected_last_message_id.", last_message_id=chat.last_message_id
        )
    ticket = None
    if data.ticket is not None:
        ticket = Ticket.objects.select_for_update().filter(widget=widget, number=data.ticket, chat=chat).first()
        if ticket is None:
            raise ValidationFailed("Unknown ticket.", errors={"ticket": ["No such ticket in this chat."]})
    _check_limits(config=config, chat=chat, token=token)
    message = chat_services.post_agent_message(
        widget=widget,
        chat=chat,
        agent=operator,
        data=chat_services.MessageInput(body=text, origin=SUPPORT_REPLY_ORIGIN),
        source="support",
    )
    effect = _ticket_effect(ticket=ticket, close=data.close_ticket, now=now)
    return ReplyResult(message=message, chat=chat, delivery=delivery_of(chat.channel), ticket_effect=effect)


def _ticket_effect(*, ticket: Ticket | None, close: bool, now) -> dict:
    """Rule 6: only the named ticket changes; `close_ticket` (default true) closes it as answered,
    false keeps it open and marks it held for the owner."""
    if ticket is None:
        return {"ticket": None, "effect": "none"}
    if ticket.state != Ticket.State.OPEN:
        return {"ticket": ticket.number, "effect": "unchanged", "state": ticket.state}
    if close:
        ticket.state, ticket.reason, ticket.closed_at = Ticket.State.CLOSED, Ticket.Reason.ANSWERED, now
        ticket.held_for_owner = False
        effect = "closed"
    else:
        ticket.held_for_owner = True
        effect = "held_for_owner"
    ticket.updated_at = now
    ticket.save(update_fields=["state", "reason", "closed_at", "held_for_owner", "updated_at"])
    return {"ticket": ticket.number, "effect": effect, "state": ticket.state}


# --- audit --------------------------------------------------------------------------------------------


def purge_audit(*, now=None) -> int:
    """Delete support actions older than 180 days (beat job)."""
    cutoff = (now or timezone.now()) - AUDIT_RETENTION
    deleted, _ = SupportAction.objects.filter(created_at__lt=cutoff).delete()
    return deleted


def recheck_action(row: SupportAction) -> SupportAction:
    """An unconfirmed reply (202) is confirmed once its message is seen stored in its chat."""
    if row.outcome != SupportAction.Outcome.PENDING or row.message_id is None:
        return row
    if Message.objects.filter(pk=row.message_id, widget_id=row.widget_id, origin=SUPPORT_REPLY_ORIGIN).exists():
        SupportAction.objects.filter(pk=row.pk, outcome=SupportAction.Outcome.PENDING).update(
            outcome=SupportAction.Outcome.OK, finished_at=timezone.now()
        )
        row.outcome = SupportAction.Outcome.OK
    return row


# --- tickets (support API) ------------------------------------------------------------------------------


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
    if ticket.state == Ticket.State.CLOSED:
        raise TicketClosed("The ticket is already closed.")
    _lease_allows(ticket.chat, claim_id, now)
    if reason == Ticket.Reason.DUPLICATE and duplicate_of is not None:
        if duplicate_of == ticket.number or not Ticket.objects.filter(widget=widget, number=duplicate_of).exists():
            raise ValidationFailed("Unknown ticket.", errors={"duplicate_of": ["No such other ticket."]})
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
    if ticket.state == Ticket.State.OPEN:
        raise TicketOpen("The ticket is open.")
    if ticket.closed_at is None or now - ticket.closed_at > TICKET_REOPEN_WINDOW:
        raise ReopenWindowPassed("A ticket can be reopened within 7 days of closing.")
    _lease_allows(ticket.chat, claim_id, now)
    if Ticket.objects.filter(widget=widget, app_user_id=ticket.app_user_id, state=Ticket.State.OPEN).exists():
        raise AccountHasOpenTicket("The account already has an open ticket.")
    ticket.state, ticket.reason, ticket.closed_at, ticket.updated_at = Ticket.State.OPEN, "", None, now
    ticket.duplicate_of = None
    _note(ticket, note=note, service_agent=service_agent, now=now, action="reopen")
    ticket.save()
    return ticket


# --- signed application endpoints: ticket intake and status, account link ------------------------------

APP_CHANNEL = "app"
INTAKE_PER_WIDGET = Budget("support_ticket_intake_widget", 60, 60)
INTAKE_PER_ACCOUNT = Budget("support_ticket_intake_account", 10, 3600)
IDENTITY_MAX = {
    "email_code": timedelta(hours=24),
    "agent_code": timedelta(hours=24),
    "cabinet": timedelta(hours=12),
    "telegram_link": timedelta(days=7),
    "app_ticket": timedelta(days=37),
}
GRANT_MAX = timedelta(minutes=30)
STATUS_MAX_TICKETS = 20


class ChatBoundToOtherAccount(Conflict):
    """The chat is bound to another application account; it is unchanged."""

    code, title = "chat_bound_to_other_account", "Chat bound to another account"


class TargetNotSupportedYet(ValidationFailed):
    """Account-link targets a messenger user, which is not supported yet."""

    code, title = "target_not_supported_yet", "Target not supported yet"


def _request_key(endpoint: str, request_id: str) -> str:
    """The idempotency key of a signed call: its endpoint and `request_id` (up to 128 characters)
    as the 64 hex digits apps.core.idempotency keys hold."""
    return hashlib.sha256(f"{endpoint}\n{request_id}".encode()).hexdigest()


def remembered(*, widget: Widget, endpoint: str, request_id: str) -> dict | None:
    """The answer of an earlier call with this `request_id` within 24 h."""
    return idempotency.answer_of(widget=widget, key=_request_key(endpoint, request_id))


def _claim_request(*, widget: Widget, endpoint: str, request_id: str) -> IdempotencyKey | dict:
    """Inside the call's transaction: claim its `request_id`, or the answer an earlier call left."""
    return idempotency.claim_or_answer(
        widget=widget, key=_request_key(endpoint, request_id), method="POST", path=f"/api/v1/ai/assistant/{endpoint}"
    )


def _widget_lock(widget: Widget) -> SupportConfig:
    """The per-widget lock of ticket numbering and account binding: the support configuration row."""
    config, _ = SupportConfig.objects.get_or_create(widget=widget)
    return SupportConfig.objects.select_for_update().get(pk=config.pk)


def _app_room(*, widget: Widget, user_id: str, email: str, locale: str) -> Chat:
    account = (
        ChatAccount.objects.select_related("chat")
        .filter(widget=widget, app_user_id=user_id, chat__channel=APP_CHANNEL)
        .first()
    )
    if account is not None:
        return account.chat
    contact = chat_services.create_contact(widget=widget, name=f"app user {user_id}"[:255], locale=locale)
    return chat_services.get_or_create_room(widget=widget, contact=contact, channel=APP_CHANNEL, source="app_ticket")


def file_ticket(*, widget: Widget, data: dict) -> dict:
    """The signed ticket intake: idempotent on `request_id` for 24 h; 60 per minute per widget and 10
    per hour per account; one room (channel `app`) and one open ticket per account (a further
    intake appends its message to the open ticket). The service never contacts the customer."""
    request_id, user_id = data["request_id"], data["account"]["user_id"]
    previous = remembered(widget=widget, endpoint="tickets", request_id=request_id)
    if previous is not None:
        return previous
    INTAKE_PER_WIDGET.check(widget.pk, detail="At most 60 ticket intakes per minute for this widget.")
    INTAKE_PER_ACCOUNT.check(widget.pk, user_id, detail="At most 10 ticket intakes per hour for this account.")
    with transaction.atomic():
        _widget_lock(widget)
        claim = _claim_request(widget=widget, endpoint="tickets", request_id=request_id)
        if isinstance(claim, dict):
            return claim
        now = timezone.now()
        client = data.get("client") or {}
        chat = _app_room(
            widget=widget, user_id=user_id, email=data["account"].get("email", ""), locale=client.get("locale", "")
        )
        message = chat_services.post_client_message(
            widget=widget,
            contact=chat.contact,
            data=chat_services.MessageInput(body=data["message"]),
            channel=APP_CHANNEL,
            source="app_ticket",
        )
        ticket = Ticket.objects.filter(widget=widget, app_user_id=user_id, state=Ticket.State.OPEN).first()
        created = ticket is None
        if created:
            last = Ticket.objects.filter(widget=widget).order_by("-number").values_list("number", flat=True).first()
            earlier = list(
                Ticket.objects.filter(widget=widget, app_user_id=user_id)
                .order_by("number")
                .values_list("number", flat=True)
            )
            ticket = Ticket.objects.create(
                widget=widget,
                number=(last or 0) + 1,
                chat=chat,
                app_user_id=user_id,
                source=data["source"],
                category=data["category"],
                subject=data.get("subject", ""),
                opening_message=message,
                previous_numbers=earlier,
                context={k: data[k] for k in ("context", "refund", "client", "in_reply_to") if data.get(k) is not None},
                created_at=now,
                updated_at=now,
            )
        else:
            ticket.updated_at = now
            ticket.save(update_fields=["updated_at"])
        account, _ = ChatAccount.objects.get_or_create(widget=widget, chat=chat)
        account.link, account.link_source, account.app_user_id = ChatAccount.Link.VERIFIED, "app_ticket", user_id
        account.identity_expires_at = now + IDENTITY_MAX["app_ticket"]
        account.hidden_until_intake = False
        account.email = None  # always null for app-ticket chats
        account.updated_at = now
        account.save()
        answer = {"number": ticket.number, "state": ticket.state, "chat_id": chat.pk, "created": created}
        idempotency.record(claim, status=200, answer=answer)
    return answer


def ticket_status(*, widget: Widget, user_id: str, cursors: list[dict] | None) -> dict:
    """Human support replies after each cursor, for at most 20 tickets of the account; numbers of
    other accounts (or none) come back in `not_found`. Read-only."""
    own = Ticket.objects.filter(widget=widget, app_user_id=user_id)
    if cursors is None:
        wanted = {t.number: 0 for t in own.order_by("-number")[:STATUS_MAX_TICKETS]}
    else:
        wanted = {c["number"]: c.get("after_message_id") or 0 for c in cursors}
    tickets = {t.number: t for t in own.filter(number__in=list(wanted))}
    out, not_found = [], []
    for number, after in wanted.items():
        ticket = tickets.get(number)
        if ticket is None:
            not_found.append(number)
            continue
        floor = max(after, (ticket.opening_message_id or 0))
        replies = Message.objects.filter(
            chat_id=ticket.chat_id,
            widget_id=widget.pk,
            author_kind=Message.Author.AGENT,
            visibility=Message.Visibility.PUBLIC,
            id__gt=floor,
        ).order_by("id")[:100]
        out.append(
            {
                "number": number,
                "state": ticket.state,
                "reason": ticket.reason or None,
                "replies": [{"id": m.pk, "text": m.body, "created_at": m.created_at.isoformat()} for m in replies],
            }
        )
    return {"tickets": out, "not_found": not_found}


def _target_chats(*, widget: Widget, target: dict) -> list[Chat]:
    if "telegram_user" in target:
        raise TargetNotSupportedYet("A messenger user cannot be linked yet.", errors={"target": ["Not supported yet."]})
    if "chat_id" in target:
        chats = list(Chat.objects.filter(widget=widget, pk=target["chat_id"]))
    elif "ticket" in target:
        chats = list(Chat.objects.filter(widget=widget, support_tickets__number=target["ticket"]).distinct())
    else:
        chats = list(Chat.objects.filter(widget=widget, contact__guid=target["widget_visitor"]))
    if not chats:
        from apps.core.errors import NotFound

        raise NotFound()
    return chats


def link_account(*, widget: Widget, data: dict) -> dict:
    """Bind the target's chats to the application account (signed account-link). A chat bound to
    another account is 409 and nothing changes; the same account extends; identity and grant are
    clamped to the method's lifetime and 30 minutes. Idempotent on `request_id` for 24 h."""
    previous = remembered(widget=widget, endpoint="account-link", request_id=data["request_id"])
    if previous is not None:
        return previous
    with transaction.atomic():
        _widget_lock(widget)
        claim = _claim_request(widget=widget, endpoint="account-link", request_id=data["request_id"])
        if isinstance(claim, dict):
            return claim
        now = timezone.now()
        chats = _target_chats(widget=widget, target=data["target"])
        user_id = data["account"]["app_user_id"]
        accounts = {a.chat_id: a for a in ChatAccount.objects.select_for_update().filter(chat__in=chats)}
        for chat in chats:
            account = accounts.get(chat.pk)
            if account is None or account.hidden_until_intake:
                continue
            live = account.identity_expires_at is not None and account.identity_expires_at > now
            if account.app_user_id and account.app_user_id != user_id and live:
                raise ChatBoundToOtherAccount("The chat is bound to another account.", chat_id=chat.pk)
        method = data["method"]
        identity = min(data["identity_expires_at"], now + IDENTITY_MAX[method])
        grant = min(data["grant"]["expires_at"], now + GRANT_MAX)
        bound = []
        for chat in chats:
            account = accounts.get(chat.pk) or ChatAccount(widget=widget, chat=chat)
            if account.hidden_until_intake:
                continue  # link `none`: never bound to an account (until the next signed intake)
            bound.append(chat.pk)
            account.link, account.link_source, account.app_user_id = ChatAccount.Link.VERIFIED, method, user_id
            account.identity_expires_at, account.grant_expires_at = identity, grant
            account.grant_token_encrypted = webhooks.encrypt_secret(data["grant"]["token"])
            account.verification_ref = data.get("verification_ref") or None
            account.email = data["account"].get("email") or account.email
            if chat.channel == APP_CHANNEL:
                account.email = None
            account.updated_at = now
            account.save()
        answer = {
            "bound": bool(bound),
            "chat_ids": bound,
            "identity_expires_at": identity.isoformat(),
            "grant_expires_at": grant.isoformat(),
        }
        idempotency.record(claim, status=200, answer=answer)
    return answer


def revoke_account(*, widget: Widget, data: dict) -> dict:
    """Clear identity, read grant and confirmed mailbox of the target's chats (every chat of a
    widget_visitor); an app-ticket chat also hides the proven account until the next intake."""
    previous = remembered(widget=widget, endpoint="account-link/revoke", request_id=data["request_id"])
    if previous is not None:
        return previous
    with transaction.atomic():
        _widget_lock(widget)
        claim = _claim_request(widget=widget, endpoint="account-link/revoke", request_id=data["request_id"])
        if isinstance(claim, dict):
            return claim
        now = timezone.now()
        chats = _target_chats(widget=widget, target=data["target"])
        revoked = 0
        for account in ChatAccount.objects.select_for_update().filter(chat__in=chats).select_related("chat"):
            if account.app_user_id is None and account.link != ChatAccount.Link.VERIFIED:
                continue
            revoked += 1
            account.link, account.identity_expires_at, account.grant_expires_at = ChatAccount.Link.ANONYMOUS, None, None
            account.grant_token_encrypted, account.verification_ref = "", None
            account.email = None
            # A pending e-mail code would prove the mailbox again: it goes with the identity.
            account.code_hash, account.code_email, account.code_expires_at = "", "", None
            account.email_requested = False
            if account.chat.channel == APP_CHANNEL or account.link_source == "app_ticket":
                account.hidden_until_intake = True
            else:
                account.app_user_id, account.link_source = None, None
            account.updated_at = now
            account.save()
        answer = {"bound": False, "revoked": revoked}
        idempotency.record(claim, status=200, answer=answer)
    return answer
