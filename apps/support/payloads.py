"""Payload builders of the support surface (plain dicts). Every chat, ticket and message response
carries `chat.account` built by `account_payload`."""

from __future__ import annotations

from django.utils import timezone

from apps.agents.models import Agent
from apps.chats.models import Chat, Message

from . import codes
from .models import SUPPORT_REPLY_ORIGIN, ChatAccount, SupportClaim, Ticket

# Delivery of a support reply, as an operator-console reply: messengers at once, the web widget's
# visitor sees it on return.
DELIVERY = {"widget": "widget_on_return", "app": "app_ticket_status"}
GRANT_MINUTES = 30


def delivery_of(channel: str) -> str:
    return DELIVERY.get(channel, "messenger")


def _iso(value):
    return value.isoformat() if value else None


def account_payload(account: ChatAccount | None, *, chat: Chat, detail: bool = False, now=None) -> dict:
    """`chat.account` with every field of the spec's table. `email` only on detail endpoints,
    only while verified (never for app-ticket chats); the code itself is never shown."""
    now = now or timezone.now()
    if account is None or account.hidden_until_intake:
        return {
            "link": ChatAccount.Link.ANONYMOUS if account is None else ChatAccount.Link.NONE,
            "email": None,
            "app_user_id": None,
            "identity_expires_at": None,
            "regrant_needed": False,
            "code_pending": False,
            "code_expires_at": None,
            "last_code_result": None,
            "last_code_at": None,
            "email_requested": False,
        }
    link = account.link
    identity_live = account.identity_expires_at is not None and account.identity_expires_at > now
    if link == ChatAccount.Link.VERIFIED and not identity_live:
        link = ChatAccount.Link.ANONYMOUS
    verified = link == ChatAccount.Link.VERIFIED
    email = None
    if detail and verified and account.link_source != "app_ticket" and chat.channel != "app":
        email = account.email
    code_pending = codes.code_pending(account, now)
    if link == ChatAccount.Link.AWAITING_CODE and not (code_pending or account.email_requested):
        link = ChatAccount.Link.ANONYMOUS  # the code lapsed, was used up or never came
    body = {
        "link": link,
        "email": email,
        "app_user_id": account.app_user_id if verified else None,
        "identity_expires_at": _iso(account.identity_expires_at) if verified else None,
        "regrant_needed": bool(verified and (account.grant_expires_at is None or account.grant_expires_at <= now)),
        "code_pending": code_pending,
        "code_expires_at": _iso(account.code_expires_at),
        "last_code_result": account.last_code_result,
        "last_code_at": _iso(account.last_code_at),
        "email_requested": account.email_requested,
    }
    if account.link_source:
        body["link_source"] = account.link_source
    return body


def sender_kind(message: Message) -> str:
    if message.author_kind == Message.Author.CLIENT:
        return "client"
    if message.author_kind == Message.Author.AI:
        return "ai"
    if message.author_kind == Message.Author.SYSTEM:
        return "system"
    if message.origin == SUPPORT_REPLY_ORIGIN:
        return "support"
    agent = message.agent
    if agent is not None and agent.type == Agent.Type.WEBHOOK:
        return "external_operator"
    return "support"


def message_payload(message: Message, *, account: ChatAccount | None = None) -> dict:
    """One message. With the chat's `account`, a customer message that carried an e-mail code or
    the mailbox a code went to shows redacted (the code and that mailbox are never shown)."""
    file = message.file
    text = message.body
    if account is not None and message.author_kind == Message.Author.CLIENT:
        text = codes.redact(text, message_id=message.pk, account=account)
    return {
        "id": message.pk,
        "chat_id": message.chat_id,
        "type": message.type,
        "text": text,
        "sender": {"kind": sender_kind(message), "agent_id": message.agent_id},
        "visibility": message.visibility,
        "via_support_api": message.origin == SUPPORT_REPLY_ORIGIN,
        "attachment": None
        if file is None
        else {"id": file.pk, "name": file.original_name, "content_type": file.content_type, "size": file.size},
        "created_at": message.created_at.isoformat(),
    }


def lease_payload(claim: SupportClaim | None, *, token_id: int | None, now) -> dict | None:
    """The chat's lease. The claim id is a capability: only the token that holds it sees it."""
    if claim is None or not claim.is_active(now):
        return None
    mine = claim.token_id is not None and claim.token_id == token_id
    return {
        "held_by": claim.service_agent,
        "mine": mine,
        "claim_id": claim.claim_id if mine else None,
        "claimed_at": claim.claimed_at.isoformat(),
        "expires_at": claim.expires_at.isoformat(),
    }


def ticket_brief(ticket: Ticket | None) -> dict | None:
    if ticket is None:
        return None
    return {
        "number": ticket.number,
        "state": ticket.state,
        "priority": ticket.priority,
        "held_for_owner": ticket.held_for_owner,
        "created_at": ticket.created_at.isoformat(),
    }


def chat_payload(chat: Chat, *, detail: bool = False, token_id: int | None = None, now=None) -> dict:
    """A support chat. Expects the selector's annotations (`unanswered_count`) and prefetches
    (`support_account`, `support_claim`, `open_tickets`, last message with its agent)."""
    now = now or timezone.now()
    last = chat.last_message
    account = getattr(chat, "support_account", None)
    claim = getattr(chat, "support_claim", None)
    open_tickets = getattr(chat, "open_tickets", [])
    body = {
        "id": chat.pk,
        "status": chat.status,
        "channel": chat.channel,
        "delivery": delivery_of(chat.channel),
        "locale": chat.contact.locale or None,
        "last_message": None
        if last is None
        else {
            "id": last.pk,
            "sender": {"kind": sender_kind(last)},
            "type": last.type,
            "created_at": last.created_at.isoformat(),
        },
        "unanswered_count": getattr(chat, "unanswered_count", 0) or 0,
        "ai_state": {"handling": chat.handling, "handled_by": chat.handled_by_type or None},
        "open_ticket": ticket_brief(open_tickets[0] if open_tickets else None),
        "account": account_payload(account, chat=chat, detail=detail, now=now),
        "lease": lease_payload(claim, token_id=token_id, now=now),
        "created_at": chat.created_at.isoformat(),
        "updated_at": chat.updated_at.isoformat(),
    }
    return body


def ticket_payload(ticket: Ticket, *, now=None) -> dict:
    chat = ticket.chat
    return {
        "number": ticket.number,
        "state": ticket.state,
        "reason": ticket.reason or None,
        "priority": ticket.priority,
        "held_for_owner": ticket.held_for_owner,
        "source": ticket.source,
        "category": ticket.category,
        "subject": ticket.subject or None,
        "duplicate_of": ticket.duplicate_of,
        "chat_id": ticket.chat_id,
        "account": account_payload(getattr(chat, "support_account", None), chat=chat, now=now),
        "created_at": ticket.created_at.isoformat(),
        "updated_at": ticket.updated_at.isoformat(),
        "closed_at": _iso(ticket.closed_at),
    }
