"""Support writes: a reply into a claimed chat, under the lease and the limits, and its effect on the ticket."""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction
from django.utils import timezone

from apps.agents.models import Agent
from apps.chats import services as chat_services
from apps.chats.models import Chat, Message
from apps.core.errors import ValidationFailed
from apps.core.models import ApiToken, Widget
from apps.core.ratelimit import Budget

from .. import config as support_config
from .. import linkguard, selectors
from ..errors import ChannelUnsupported, ChatChanged, ChatClaimed, ChatUnavailable, RoomReplyLimit, SupportRateLimited
from ..models import SUPPORT_REPLY_ORIGIN, SupportConfig, Ticket
from ..payloads import delivery_of
from .claims import _active_claim

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
        locked=True,
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
