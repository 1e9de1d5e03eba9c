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

    class Meta:
        verbose_name_plural = "event switches"

    def __str__(self) -> str:
        return f"{self.event_type}: {'on' if self.enabled else 'off'}"


class Subscription(models.Model):
    widget = models.ForeignKey(Widget, on_delete=models.CASCADE, related_name="webhook_subscriptions")
    url = models.CharField(max_length=2048)
    events = models.JSONField(default=list)
    # Fernet token of the signing secret (apps.core.crypto); never readable through the API.
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


class Endpoint(models.Model):
    """A delivery target other than a subscription, owned by a higher app that names it by `owner`
    (its kind, e.g. "external_operator") and `owner_id`. The engine sends to it as to a subscription
    (same rows, retries, attempt log, redelivery); the owner decides what happens to queued rows:

    - `send`: due rows are sent;
    - `hold`: due rows stay pending without being sent (a paused target; `release_endpoint` sends them);
    - `drop`: queued rows are skipped at once, also one leased in the instant before (a kill switch).

    During `previous_secret_until` the old secret signs too (`X-Service-Signature-Previous` and a
    second `webhook-signature` entry): the overlap window of a rotated per-tenant signing secret."""

    class Mode(models.TextChoices):
        SEND = "send"
        HOLD = "hold"
        DROP = "drop"

    widget = models.ForeignKey(Widget, on_delete=models.CASCADE, related_name="+")
    owner = models.CharField(max_length=32)
    owner_id = models.BigIntegerField()
    url = models.CharField(max_length=2048)
    secret_encrypted = models.TextField(blank=True, default="")
    previous_secret_encrypted = models.TextField(blank=True, default="")
    previous_secret_until = models.DateTimeField(null=True, blank=True)
    mode = models.CharField(max_length=8, choices=Mode.choices, default=Mode.SEND)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [models.Index(fields=["widget", "owner", "owner_id"], name="webhook_endpoint_owner")]

    def __str__(self) -> str:
        return f"{self.owner} {self.owner_id} → {self.url}"

    @property
    def is_active(self) -> bool:
        return self.mode != self.Mode.DROP


# A delivery in a final state: never attempted again, only redelivered as a new row.
SETTLED = models.Q(status__in=["delivered", "failed", "skipped"])


class Delivery(models.Model):
    """One event to one endpoint (a subscription, or an `Endpoint` of a higher app). The Celery
    message is only a trigger: the sweeper sends every row whose `next_attempt_at` has passed, so a
    lost message or a killed worker costs nothing."""

    class Status(models.TextChoices):
        PENDING = "pending"
        DELIVERED = "delivered"
        FAILED = "failed"
        SKIPPED = "skipped"

    class Envelope(models.TextChoices):
        NATIVE = "native"
        LEGACY = "legacy"

    # Every index below is written on each lease and each record (both move `next_attempt_at`, so no
    # update is HOT): the foreign keys have no index of their own where a composite one leads with
    # them (widget, subscription) or where the column is null on most rows (endpoint, redelivery_of:
    # partial indexes of the rows that have one).
    widget = models.ForeignKey(Widget, on_delete=models.CASCADE, related_name="+", db_index=False)
    # Exactly one of `subscription` and `endpoint` is set.
    subscription = models.ForeignKey(
        Subscription, null=True, blank=True, on_delete=models.CASCADE, related_name="deliveries", db_index=False
    )
    endpoint = models.ForeignKey(
        Endpoint, null=True, blank=True, on_delete=models.CASCADE, related_name="deliveries", db_index=False
    )
    # The outbox event of a subscription's delivery; an endpoint's call has its own `key` instead.
    event = models.ForeignKey(OutboxEvent, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    key = models.UUIDField(null=True, blank=True)
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
    redelivery_of = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+", db_index=False
    )
    # The message an endpoint's call carries (a compat bot's CLIENT_MESSAGE): the call goes with the
    # message, so erasing the message erases what was sent of it.
    message = models.ForeignKey(
        "chats.Message", null=True, blank=True, on_delete=models.CASCADE, related_name="+", db_index=False
    )
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name_plural = "deliveries"
        indexes = [
            models.Index(fields=["subscription", "-created_at", "-id"], name="delivery_sub_created"),
            models.Index(fields=["widget", "-created_at"], name="delivery_widget_created"),
            models.Index(fields=["next_attempt_at"], name="delivery_due", condition=models.Q(status="pending")),
            models.Index(
                fields=["widget", "endpoint", "status"],
                name="delivery_endpoint_status",
                condition=models.Q(endpoint__isnull=False),
            ),
            # the deletion of an endpoint or of a redelivered row finds its rows by these alone
            models.Index(fields=["endpoint"], name="delivery_endpoint", condition=models.Q(endpoint__isnull=False)),
            models.Index(
                fields=["redelivery_of"], name="delivery_redelivery_of", condition=models.Q(redelivery_of__isnull=False)
            ),
            models.Index(fields=["message"], name="delivery_message", condition=models.Q(message__isnull=False)),
        ]
        constraints = [
            # One automatic delivery per endpoint and event (fan-out may run twice; it stays one).
            models.UniqueConstraint(
                fields=["subscription", "event"],
                condition=models.Q(redelivery_of__isnull=True),
                name="delivery_once_per_subscription_event",
            ),
            models.CheckConstraint(
                condition=(
                    models.Q(subscription__isnull=False, endpoint__isnull=True, event__isnull=False)
                    | models.Q(subscription__isnull=True, endpoint__isnull=False, key__isnull=False)
                ),
                name="delivery_one_target",
            ),
        ]

    @property
    def target(self) -> Subscription | Endpoint:
        return self.subscription if self.subscription_id else self.endpoint

    @property
    def target_key(self) -> str:
        return target_key(self.subscription_id, self.endpoint_id)

    @property
    def idempotency_key(self) -> str:
        """X-Service-Idempotency-Key and the body's `id`."""
        return str(self.event_id or self.key)


class Attempt(models.Model):
    """One HTTP attempt of a delivery, as the delivery log shows it: when, how long, what came back.
    `error` is empty for a 2xx, `http_<status>` for any other answer, else the transport reason
    (`timeout`, `tls_error`, `connection_error`, ...) or `blocked:<reason>`."""

    # indexed by attempt_delivery_number, which leads with it
    delivery = models.ForeignKey(Delivery, on_delete=models.CASCADE, related_name="attempt_rows", db_index=False)
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


def target_key(subscription_id: int | None, endpoint_id: int | None) -> str:
    """The engine's per-target key of a delivery row (its in-flight cap counts per target)."""
    return f"s{subscription_id}" if subscription_id else f"e{endpoint_id}"
