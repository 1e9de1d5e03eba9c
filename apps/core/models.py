"""Tenancy (Account -> Widget), API tokens, stored files, and the core's own bookkeeping rows.

Every widget-scoped row in the project carries `widget`; account-wide rows carry `account`.
Indexes on widget-scoped tables start with the tenant column.
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.utils import timezone


def new_button_guid() -> str:
    return uuid.uuid4().hex


class Account(models.Model):
    """The paying owner: a Django user plus profile. Owns one or more widgets."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="account")
    name = models.CharField(max_length=150, blank=True, default="")
    surname = models.CharField(max_length=150, blank=True, default="")
    phone = models.CharField(max_length=32, blank=True, default="")
    # Paid operator seats of the plan; the billing app will derive this from the plan.
    seats = models.PositiveIntegerField(default=3)
    created_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"{self.user.email or self.user.get_username()} (account {self.pk})"

    @property
    def email(self) -> str:
        return self.user.email


class Widget(models.Model):
    """What the spec also calls a "button". The tenant of every API request."""

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="widgets")
    name = models.CharField(max_length=200, default="My widget")
    button_guid = models.CharField(max_length=32, unique=True, default=new_button_guid, editable=False)
    api_enabled = models.BooleanField(
        default=False, help_text="Allow widget API (JS and REST). Issuing a token does not enable it."
    )
    created_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"{self.name} (#{self.pk})"


class File(models.Model):
    """An uploaded or fetched file of a widget, stored through django-storages (apps.core.files).
    Chats, avatars, launcher icons and billing documents refer to it. The table keeps the name it
    had when the chats app owned the model."""

    widget = models.ForeignKey(Widget, on_delete=models.CASCADE, related_name="files")
    stored = models.FileField(upload_to="files/%Y/%m/", max_length=300)
    original_name = models.CharField(max_length=255)
    content_type = models.CharField(max_length=255, default="application/octet-stream")
    size = models.PositiveBigIntegerField()
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "chats_file"
        indexes = [models.Index(fields=["widget", "-created_at"], name="file_widget_created")]


class ApiToken(models.Model):
    """A bearer token of one widget. Only a one-way hash of the secret is stored.

    SECURITY: `prefix` is the non-secret public part used for lookup (indexed, shown in admin and
    logs); `secret_hash` is SHA-256 of the whole token, compared in constant time.
    """

    widget = models.ForeignKey(Widget, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100, blank=True, default="")
    prefix = models.CharField(max_length=16, unique=True)
    secret_hash = models.CharField(max_length=64)
    scopes = models.JSONField(default=list)
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [models.Index(fields=["widget", "-created_at"], name="token_widget_created")]
        # Checked by the admin (apps.core.admin): without the first, staff issue and see tokens only
        # of the widgets their own account owns; the second is needed for any sensitive scope.
        permissions = [
            ("issue_for_any_widget", "Can issue and revoke API tokens for any widget"),
            ("issue_sensitive_scopes", "Can issue API tokens with sensitive scopes"),
        ]

    def __str__(self) -> str:
        return f"{self.name or 'token'} {self.prefix}…"

    @property
    def is_revoked(self) -> bool:
        return self.revoked_at is not None

    def is_expired(self, now=None) -> bool:
        return self.expires_at is not None and self.expires_at <= (now or timezone.now())


class IdempotencyKey(models.Model):
    """A claimed `X-Service-Idempotency-Key`, unique per widget, or the derived key of a signed
    call's `request_id` (apps.support; `idempotency.derived_key`, which no header key can equal),
    whose repeat answers the stored `answer`.

    The row is inserted before the operation's work in the same transaction, so of two concurrent
    requests with one key exactly one can win; a failed operation rolls its claim back.
    """

    widget = models.ForeignKey(Widget, on_delete=models.CASCADE, related_name="+")
    key = models.CharField(max_length=64)
    method = models.CharField(max_length=8)
    path = models.CharField(max_length=500)
    response_status = models.PositiveSmallIntegerField(null=True)
    resource_id = models.CharField(max_length=64, blank=True, default="")
    location = models.CharField(max_length=500, blank=True, default="")
    # The body a repeat answers (replaying operations only; a header key's repeat is 409).
    answer = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["widget", "key"], name="idempotency_widget_key")]
        indexes = [models.Index(fields=["created_at"], name="idempotency_created")]


class OutboxEvent(models.Model):
    """A domain event, written in the transaction of the change it describes.

    Its id is the webhook idempotency key (`X-Service-Idempotency-Key`, body `id`).
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    widget = models.ForeignKey(Widget, on_delete=models.CASCADE, related_name="+")
    type = models.CharField(max_length=64)
    data = models.JSONField(default=dict)
    created_at = models.DateTimeField(default=timezone.now)
    dispatched_at = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveIntegerField(default=0)

    class Meta:
        indexes = [
            models.Index(fields=["widget", "-created_at"], name="outbox_widget_created"),
            models.Index(fields=["created_at"], name="outbox_pending", condition=models.Q(dispatched_at__isnull=True)),
        ]


class RateLimitHit(models.Model):
    """One admitted unit of a named budget; the database backend of apps.core.ratelimit.

    Used only when no REDIS_URL is configured (the embedded default).
    """

    bucket = models.CharField(max_length=200)
    at = models.FloatField()

    class Meta:
        indexes = [models.Index(fields=["bucket", "at"], name="ratelimit_bucket_at")]


class SignedNonce(models.Model):
    """A used `X-Service-Nonce` of a signed application-assistant call (apps.core.signed), unique
    per widget: of two requests with one nonce exactly one insert wins. Kept 600 s."""

    widget = models.ForeignKey(Widget, on_delete=models.CASCADE, related_name="+")
    nonce = models.CharField(max_length=64)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["widget", "nonce"], name="signed_nonce_once")]
        indexes = [models.Index(fields=["created_at"], name="signed_nonce_created")]
