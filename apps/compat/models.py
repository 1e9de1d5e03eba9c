"""Compat Bot API: bots of the legacy platform's wire format, the chats they gave up, and the
CLIENT_MESSAGEs posted to them. (The legacy Chat API channel is a custom channel of
apps.channels in the legacy wire format.)"""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from apps.agents.models import Agent
from apps.channels.models import CustomChannel
from apps.chats.models import Chat, Message
from apps.core.models import Widget
from apps.webhooks.models import Delivery, Endpoint


class CompatBot(models.Model):
    """A bot of the legacy Bot API: visitor messages of the widget's web chats no person handles
    are posted to `url` as CLIENT_MESSAGE; the bot answers at /api/compat/legacy/bot/{token} and
    writes as its own operator (`agent`, an automated operator). The posts are deliveries of the
    webhook engine to the bot's `endpoint` (owner "compat_bot"), which holds the same URL and the
    secret they are signed with (X-Service-Signature and the Standard Webhooks headers)."""

    widget = models.ForeignKey(Widget, on_delete=models.CASCADE, related_name="compat_bots")
    agent = models.OneToOneField(Agent, on_delete=models.CASCADE, related_name="compat_bot")
    endpoint = models.OneToOneField(Endpoint, on_delete=models.PROTECT, related_name="+")
    url = models.CharField(max_length=2048)
    # The token's public first part finds the row; its SHA-256 is compared in constant time.
    token_key = models.CharField(max_length=16, unique=True)
    token_hash = models.CharField(max_length=64)
    is_active = models.BooleanField(default=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [models.Index(fields=["widget", "is_active"], name="compat_bot_widget_active")]

    def __str__(self) -> str:
        return f"compat bot {self.pk} → {self.url}"


class CompatBotHandoff(models.Model):
    """A chat the bot no longer serves: it asked for a person (INVITE_AGENT with someone online),
    or it did not answer a CLIENT_MESSAGE after its retries."""

    class Reason(models.TextChoices):
        INVITED = "invited"
        BOT_UNREACHABLE = "bot_unreachable"

    widget = models.ForeignKey(Widget, on_delete=models.CASCADE, related_name="+")
    bot = models.ForeignKey(CompatBot, on_delete=models.CASCADE, related_name="handoffs")
    chat = models.ForeignKey(Chat, on_delete=models.CASCADE, related_name="+")
    reason = models.CharField(max_length=16, choices=Reason.choices)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["bot", "chat"], name="compat_handoff_once_per_chat")]
        indexes = [models.Index(fields=["widget", "chat"], name="compat_handoff_widget_chat")]


class ClientMessage(models.Model):
    """One visitor message posted to one bot as a CLIENT_MESSAGE: its webhook-engine `delivery`
    holds the body, the attempts (3 s each, 2 retries) and the state; this row ties it to the chat
    and the message (the hand-off after the last failure, the erasure of the message)."""

    widget = models.ForeignKey(Widget, on_delete=models.CASCADE, related_name="+")
    bot = models.ForeignKey(CompatBot, on_delete=models.CASCADE, related_name="client_messages")
    chat = models.ForeignKey(Chat, on_delete=models.CASCADE, related_name="+")
    message = models.ForeignKey(Message, on_delete=models.CASCADE, related_name="+")
    delivery = models.OneToOneField(Delivery, on_delete=models.CASCADE, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["bot", "message"], name="compat_delivery_once")]
        indexes = [models.Index(fields=["widget", "bot", "-created_at"], name="compat_delivery_widget_bot")]


class LegacyChatChannel(CustomChannel):
    """The legacy Chat API channels among the custom channels (Django admin's view of them)."""

    class Meta:
        proxy = True
        verbose_name = "legacy Chat API channel"
