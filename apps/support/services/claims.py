"""Support writes: claims, the leases that give one support agent a chat for a while."""

from __future__ import annotations

import secrets
from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from apps.chats import services as chat_services
from apps.chats.models import Chat
from apps.core.models import ApiToken, Widget

from ..errors import ChatClaimed, ClaimMismatch
from ..models import SupportClaim

# --- claims -------------------------------------------------------------------------------------------

CLAIM_TTL_DEFAULT = 300
CLAIM_TTL_MIN, CLAIM_TTL_MAX = 60, 1800


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
