"""Reads of the compat app. Path secrets are compared in constant time."""

from __future__ import annotations

import hmac
import random

from apps.agents import selectors as agent_selectors
from apps.agents.models import Agent
from apps.chats.models import Chat
from apps.core.auth.tokens import hash_token
from apps.core.models import Widget
from apps.platform.statements import ModelStatement, Slot

from .models import CompatBot, CompatBotHandoff

KEY_LENGTH = 8
WIDGET_CHANNEL = "widget"


def find_bot(token: str) -> CompatBot | None:
    """The bot whose path token is `token`, or None. The row is found by the token's public first
    part; the whole token's SHA-256 is compared in constant time (also when no row matched)."""
    if not isinstance(token, str) or not 16 <= len(token) <= 128 or not token.isascii():
        return None
    bot = CompatBot.objects.select_related("widget", "agent").filter(token_key=token[:KEY_LENGTH]).first()
    stored = bot.token_hash if bot is not None else "0" * 64
    if not hmac.compare_digest(hash_token(token), stored) or bot is None:
        return None
    return bot


def active_bot(widget: Widget) -> CompatBot | None:
    """The widget's active bot, or None. Asked on every visitor message: compiled once."""
    found = _ACTIVE_BOT.instances(widget=widget.pk)
    return found[0] if found else None


_ACTIVE_BOT = ModelStatement(
    lambda: (
        CompatBot.objects.select_related("agent", "endpoint")
        .filter(widget_id=Slot("widget", Widget._meta.pk), is_active=True)
        .order_by("pk")[:1]
    ),
)


def serves(bot: CompatBot, chat: Chat) -> bool:
    """A compat bot serves every web-widget chat of its widget that no person handles: not an
    internal or spam chat, not owned by a human operator, not handed off by this bot."""
    if not bot.is_active or chat.widget_id != bot.widget_id:
        return False
    if chat.channel != WIDGET_CHANNEL or chat.is_internal or chat.status == Chat.Status.SPAM:
        return False
    if chat.agent_id is not None and chat.agent_id != bot.agent_id:
        owner_type = Agent.objects.filter(pk=chat.agent_id).values_list("type", flat=True).first()
        if owner_type == Agent.Type.HUMAN:
            return False
    return not CompatBotHandoff.objects.filter(bot=bot, chat=chat).exists()


def online_humans(widget: Widget) -> list[Agent]:
    online = agent_selectors.online_agent_ids(widget)
    if not online:
        return []
    return list(
        Agent.objects.filter(widget=widget, pk__in=online, type=Agent.Type.HUMAN, status=Agent.Status.ACTIVE).order_by(
            "pk"
        )
    )


def random_online_human(widget: Widget) -> Agent | None:
    humans = online_humans(widget)
    return random.choice(humans) if humans else None  # noqa: S311 (load spreading, not security)
