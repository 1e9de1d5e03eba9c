"""Webhook subscriptions, deliveries (the source of truth of what must be sent) and attempts."""

from __future__ import annotations

import uuid

from django.db import models
from django.utils import timezone

from apps.core.models import OutboxEvent, Widget


class EventSwitch(models.Model):
    """Platform-wide switch of one native event type (Django admin). Without a row, the
    WEBHOOK_LIVE_EVENTS setting decides (`Live` events are on, `Wired` ones off)."""

    event_type = models.CharField(max_length=64, unique=True)
    enabled = models.BooleanField(default=False)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"{self.event_type}: {'on' if self.enabled else 'off'}"


class Subscription(models.Model):
    widget = models.ForeignKey(Widget, on_delete=models.CASCADE, related_name="webhook_subscriptions")
    url = models.CharField(max_length=2048)
    events = models.JSONField(default=list)
    # Fernet token of the signing secret (apps.webhooks.crypto); never readable through the API.
    secret_encrypted = models.TextField(blank=True, default="")
    is_active = models.BooleanField(default=True)
    is_legacy_compat = models.BooleanField(default=False)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["widget", "url"], name="webhook_subscription_url_unique")]
        indexes = [models.Index(fields=["widget", "-created_at", "-id"], name="webhook_sub_widget_created")]

    def __str__(self) -> str:
        return f"subscription {self.pk} → {self.url}"


class Delivery(models.Model):
    """One event to one endpoint. The Celery message is only a trigger: the sweeper sends every
    row whose `next_attempt_at` has passed, so a lost message or a killed worker costs nothing."""

    class Status(models.TextChoices):
        PENDING = "pending"
        DELIVERED = "delivered"
        FAILED = "failed"
        SKIPPED = "skipped"

    class Envelope(models.TextChoices):
        NATIVE = "native"
        LEGACY = "legacy"

    widget = models.ForeignKey(Widget, on_delete=models.CASCADE, related_name="+")
    subscription = models.ForeignKey(Subscription, on_delete=models.CASCADE, related_name="deliveries")
    event = models.ForeignKey(OutboxEvent, on_delete=models.CASCADE, related_name="+")
    # X-Service-Delivery: one per endpoint and event; a manual redelivery gets a new one.
    delivery_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    event_type = models.CharField(max_length=64)
    envelope = models.CharField(max_length=8, choices=Envelope.choices, default=Envelope.NATIVE)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    # The exact bytes sent (UTF-8 JSON): identical on every retry.
    body = models.TextField()
    # What the log shows: the sent payload with button_id removed and personal data masked.
    payload = models.JSONField(default=dict)
    attempts = models.PositiveSmallIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    last_status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    last_error = models.CharField(max_length=200, blank=True, default="")
    redelivery_of = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [
            models.Index(fields=["subscription", "-created_at", "-id"], name="delivery_sub_created"),
            models.Index(fields=["widget", "-created_at"], name="delivery_widget_created"),
            models.Index(fields=["next_attempt_at"], name="delivery_due", condition=models.Q(status="pending")),
        ]
        constraints = [
            # One automatic delivery per endpoint and event (fan-out may run twice; it stays one).
            models.UniqueConstraint(
                fields=["subscription", "event"],
                condition=models.Q(redelivery_of__isnull=True),
                name="delivery_once_per_subscription_event",
            ),
        ]


class Attempt(models.Model):
    """One HTTP attempt of a delivery, as the delivery log shows it: when, how long, what came back.
    `error` is empty for a 2xx, `http_<status>` for any other answer, else the transport reason
    (`timeout`, `tls_error`, `connection_error`, ...) or `blocked:<reason>`."""

    delivery = models.ForeignKey(Delivery, on_delete=models.CASCADE, related_name="attempt_rows")
    number = models.PositiveSmallIntegerField()
    started_at = models.DateTimeField(default=timezone.now)
    duration_ms = models.PositiveIntegerField(default=0)
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    error = models.CharField(max_length=200, blank=True, default="")
    # The first bytes of the receiver's answer (RESPONSE_EXCERPT_BYTES, decoded, personal data
    # masked like the payload); empty when nothing came back.
    response_excerpt = models.CharField(max_length=512, blank=True, default="")

    class Meta:
        indexes = [models.Index(fields=["delivery", "number"], name="attempt_delivery_number")]
