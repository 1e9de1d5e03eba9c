"""Channels other than the on-site widget: custom channels, the external ids of their contacts, and
the messenger connections. (Operator messages to a channel are deliveries of the webhook engine.)"""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from apps.chats.models import Contact
from apps.core.models import Widget


class CustomChannel(models.Model):
    """A channel registered by an installed app: inbound at POST /v1/channels/{id}/messages,
    operator messages of its `ch{id}` chats posted to `url`, signed like a webhook."""

    class WireFormat(models.TextChoices):
        NATIVE = "native"  # our envelope, signed like a webhook
        LEGACY_CHAT = "legacy_chat"  # the legacy platform's Chat API (compat routes)

    widget = models.ForeignKey(Widget, on_delete=models.CASCADE, related_name="custom_channels")
    name = models.CharField(max_length=255)
    wire_format = models.CharField(max_length=16, choices=WireFormat.choices, default=WireFormat.NATIVE)
    # Legacy Chat API channels are addressed by a secret in the path: `path_key` (its public first
    # part) finds the row, the SHA-256 of the whole secret is compared in constant time.
    path_key = models.CharField(max_length=16, null=True, blank=True, unique=True)
    path_secret_hash = models.CharField(max_length=64, blank=True, default="")
    url = models.CharField(max_length=2048)
    # Fernet token of the signing secret (the webhooks' rotatable key set); never readable again.
    secret_encrypted = models.TextField()
    is_active = models.BooleanField(default=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [models.Index(fields=["widget", "-created_at", "-id"], name="custom_channel_widget_created")]

    def __str__(self) -> str:
        return f"ch{self.pk} {self.name}"

    @property
    def code(self) -> str:
        return f"ch{self.pk}"


class ExternalContact(models.Model):
    """The contact behind an external id on one channel (`ch{id}`, `tg`, ...): the first inbound
    message creates it, later ones find it. `address` is where replies go (the custom channel's
    `external_channel_id`, a Telegram chat id), as the last inbound message named it."""

    widget = models.ForeignKey(Widget, on_delete=models.CASCADE, related_name="+")
    channel = models.CharField(max_length=64)
    external_id = models.CharField(max_length=255)
    address = models.CharField(max_length=255, blank=True, default="")
    contact = models.ForeignKey(Contact, on_delete=models.CASCADE, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["widget", "channel", "external_id"], name="external_contact_once_per_channel"
            )
        ]
        indexes = [models.Index(fields=["widget", "channel", "contact"], name="external_contact_by_contact")]


class MessengerConnection(models.Model):
    """The stored credential of one messenger provider of a widget. Secrets are Fernet tokens under
    the webhooks' rotatable key set; the hook id (the path of our inbound hook) and the provider
    secret that authenticates it are never shown by the API."""

    class WebhookStatus(models.TextChoices):
        NONE = ""
        REGISTERED = "registered"
        FAILED = "failed"
        UNCONFIRMED = "unconfirmed_provider_api"
        NOT_SUPPORTED = "not_supported"

    widget = models.ForeignKey(Widget, on_delete=models.CASCADE, related_name="+")
    provider = models.CharField(max_length=16)
    token_encrypted = models.TextField(blank=True, default="")
    sid_encrypted = models.TextField(blank=True, default="")
    url = models.CharField(max_length=2048, blank=True, default="")
    hook_id = models.CharField(max_length=64, unique=True)
    hook_secret_encrypted = models.TextField(blank=True, default="")
    webhook_status = models.CharField(max_length=32, choices=WebhookStatus.choices, blank=True, default="")
    webhook_detail = models.CharField(max_length=255, blank=True, default="")
    # Whether the hook takes calls (and long polling reads): set by a registration that did not fail,
    # cleared while a PUT re-registers; a call to a connection that is not live answers as an unknown hook.
    inbound_live = models.BooleanField(default=False)
    # Telegram long-poll mode: the next getUpdates offset (the last update id taken + 1).
    poll_offset = models.BigIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["widget", "provider"], name="messenger_once_per_widget")]


class InboundUpdate(models.Model):
    """A provider update already stored: a redelivered update id makes no second message."""

    widget = models.ForeignKey(Widget, on_delete=models.CASCADE, related_name="+")
    provider = models.CharField(max_length=16)
    update_id = models.CharField(max_length=64)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["widget", "provider", "update_id"], name="inbound_update_once")]


class VkCommunity(models.Model):
    """A VK community connected to a widget (Callback API). Its access token and callback secret
    are Fernet tokens; the confirmation code is what VK asks our hook to echo once."""

    widget = models.ForeignKey(Widget, on_delete=models.CASCADE, related_name="+")
    community_id = models.BigIntegerField()
    name = models.CharField(max_length=255, blank=True, default="")
    screen_name = models.CharField(max_length=255, blank=True, default="")
    token_encrypted = models.TextField()
    secret_encrypted = models.TextField()
    confirmation_code = models.CharField(max_length=64, blank=True, default="")
    server_id = models.BigIntegerField(null=True, blank=True)
    webhook_status = models.CharField(max_length=32, blank=True, default="")
    webhook_detail = models.CharField(max_length=255, blank=True, default="")
    is_primary = models.BooleanField(default=False)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name = "VK community"
        verbose_name_plural = "VK communities"
        constraints = [
            models.UniqueConstraint(fields=["widget", "community_id"], name="vk_community_once_per_widget"),
            models.UniqueConstraint(
                fields=["widget"], condition=models.Q(is_primary=True), name="vk_one_primary_community"
            ),
        ]
        indexes = [models.Index(fields=["widget", "-created_at", "-id"], name="vk_community_widget_created")]


class AdCabinet(models.Model):
    """An ad-marketplace cabinet (`av__<id>` channels), created by the interactive cabinet flow
    (`create_ad_cabinet`); the API reads, enables/disables within the plan's slots and deletes it.
    `suspended_by_billing` is set by the system only."""

    class Status(models.TextChoices):
        ENABLED = "enabled"
        DISABLED = "disabled"
        SUSPENDED_BY_BILLING = "suspended_by_billing"

    widget = models.ForeignKey(Widget, on_delete=models.CASCADE, related_name="+")
    name = models.CharField(max_length=255)
    status = models.CharField(max_length=32, choices=Status.choices, default=Status.DISABLED)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [models.Index(fields=["widget", "-created_at", "-id"], name="ad_cabinet_widget_created")]

    @property
    def channel(self) -> str:
        return f"av__{self.pk}"
