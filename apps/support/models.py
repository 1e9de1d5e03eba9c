"""The support-agent surface: per-widget configuration, chat leases (claims) and the audit of every
support action. Indexes start with the tenant."""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from apps.agents.models import Agent
from apps.chats.models import Chat
from apps.core.models import ApiToken, Widget
from apps.erasure.selectors import LiveQuerySet

# The marker on a chat message sent through the support API. Self-learning (apps.ai) excludes
# messages with this origin from its references; the dialogue audit labels them by it.
SUPPORT_REPLY_ORIGIN = "support_agent"


def default_room_reply_limit() -> dict:
    return {"count": 3, "window_sec": 1800}


def default_token_reply_limit() -> dict:
    return {"per_10_min": 20, "per_day": 300}


class SupportConfig(models.Model):
    """The owner's support configuration of one widget (product-decisions.md "Support
    configuration"). Written whole by `configure_support` and Django admin through
    `services.configure_support`, which refuses enabling without a human operator, an allowed
    token and an IP allowlist."""

    widget = models.OneToOneField(Widget, on_delete=models.CASCADE, related_name="support_config")
    enabled = models.BooleanField(default=False)
    operator = models.ForeignKey(Agent, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    # Token prefixes (`cwt_` + 8 characters), what admin shows.
    allowed_tokens = models.JSONField(default=list, blank=True)
    ip_allowlist = models.JSONField(default=list, blank=True)
    link_hosts = models.JSONField(default=list, blank=True)
    exact_links = models.JSONField(default=list, blank=True)
    app_store_id = models.CharField(max_length=64, null=True, blank=True)
    play_package = models.CharField(max_length=255, null=True, blank=True)
    ipv4_literals = models.JSONField(default=list, blank=True)
    messenger_handles = models.JSONField(default=list, blank=True)
    emails = models.JSONField(default=list, blank=True)
    channels = models.JSONField(default=list, blank=True)
    room_reply_limit = models.JSONField(default=default_room_reply_limit)
    token_reply_limit = models.JSONField(default=default_token_reply_limit)
    # The signed account-link endpoints answer 404 unless the widget is on the account-link list.
    account_link = models.BooleanField(default=False)
    updated_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"support of widget {self.widget_id} ({'on' if self.enabled else 'off'})"


class SupportClaim(models.Model):
    """The lease of one chat by one support agent (one row per chat: a new claim replaces an
    expired or released lease in place)."""

    widget = models.ForeignKey(Widget, on_delete=models.CASCADE, related_name="+")
    chat = models.OneToOneField(Chat, on_delete=models.CASCADE, related_name="support_claim")
    claim_id = models.CharField(max_length=64)
    token = models.ForeignKey(ApiToken, null=True, on_delete=models.SET_NULL, related_name="+")
    service_agent = models.CharField(max_length=48)
    note = models.CharField(max_length=500, blank=True, default="")
    claimed_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()
    released_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["widget", "expires_at"], name="support_claim_widget_exp")]

    def is_active(self, now) -> bool:
        return self.released_at is None and self.expires_at > now


class SupportAction(models.Model):
    """One support call and its outcome, refused ones included. Text is kept as its SHA-256 and
    length only. Rows older than 180 days are purged by a beat job."""

    class Outcome(models.TextChoices):
        OK = "ok"
        REFUSED = "refused"
        PENDING = "pending"  # a reply that reached the chat server, not yet seen stored

    widget = models.ForeignKey(Widget, on_delete=models.CASCADE, related_name="+")
    token = models.ForeignKey(ApiToken, null=True, on_delete=models.SET_NULL, related_name="+")
    token_prefix = models.CharField(max_length=16)
    service_agent = models.CharField(max_length=48, blank=True, default="")
    kind = models.CharField(max_length=32)
    method = models.CharField(max_length=8)
    path = models.CharField(max_length=500)
    client_address = models.CharField(max_length=64, blank=True, default="")
    idempotency_key = models.CharField(max_length=64, blank=True, default="")
    chat_id = models.BigIntegerField(null=True, blank=True)
    ticket_number = models.BigIntegerField(null=True, blank=True)
    message_id = models.BigIntegerField(null=True, blank=True)
    claim_id = models.CharField(max_length=64, blank=True, default="")
    text_sha256 = models.CharField(max_length=64, blank=True, default="")
    text_length = models.PositiveIntegerField(null=True, blank=True)
    outcome = models.CharField(max_length=16, choices=Outcome.choices, default=Outcome.PENDING)
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    reason = models.CharField(max_length=64, blank=True, default="")
    # Labelled separately in the dialogue audit: a reply sent as the support operator.
    is_support_reply = models.BooleanField(default=False)
    created_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [
            models.Index(fields=["widget", "-created_at"], name="support_action_widget_created"),
            models.Index(fields=["widget", "token", "kind", "-created_at"], name="support_action_token_kind"),
            models.Index(fields=["created_at"], name="support_action_created"),
            # Rule 8: has an agent acted on a chat's open ticket?
            models.Index(fields=["widget", "ticket_number", "created_at"], name="support_action_ticket"),
        ]


class TicketQuerySet(LiveQuerySet):
    """`live()`: the ticket of a chat whose contact is under erasure reads as missing."""

    contact_path = "chat__contact_id"


class Ticket(models.Model):
    """A support ticket, addressed by its `number` (unique per widget). Filed by the signed app
    intake (one room and one open ticket per account) and worked through the support API."""

    class State(models.TextChoices):
        OPEN = "open"
        CLOSED = "closed"

    class Reason(models.TextChoices):
        RESOLVED = "resolved"
        ANSWERED_BY_EMAIL = "answered_by_email"
        DUPLICATE = "duplicate"
        FALSE_POSITIVE = "false_positive"
        ANSWERED = "answered"  # closed by a support reply naming the ticket

    class Priority(models.TextChoices):
        NORMAL = "normal"
        HIGH = "high"

    widget = models.ForeignKey(Widget, on_delete=models.CASCADE, related_name="+")
    number = models.PositiveBigIntegerField()
    chat = models.ForeignKey(Chat, on_delete=models.CASCADE, related_name="support_tickets")
    app_user_id = models.CharField(max_length=128)
    state = models.CharField(max_length=8, choices=State.choices, default=State.OPEN)
    reason = models.CharField(max_length=24, choices=Reason.choices, blank=True, default="")
    priority = models.CharField(max_length=8, choices=Priority.choices, default=Priority.NORMAL)
    held_for_owner = models.BooleanField(default=False)
    source = models.CharField(max_length=8, default="app")
    category = models.CharField(max_length=16, default="other")
    subject = models.CharField(max_length=200, blank=True, default="")
    opening_message = models.ForeignKey(
        "chats.Message", null=True, blank=True, on_delete=models.SET_NULL, related_name="+", db_constraint=False
    )
    duplicate_of = models.PositiveBigIntegerField(null=True, blank=True)
    previous_numbers = models.JSONField(default=list, blank=True)
    agent_notes = models.JSONField(default=list, blank=True)
    context = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)
    closed_at = models.DateTimeField(null=True, blank=True)

    objects = TicketQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["widget", "number"], name="support_ticket_number"),
            models.UniqueConstraint(
                fields=["widget", "app_user_id"],
                condition=models.Q(state="open"),
                name="support_ticket_one_open_per_account",
            ),
        ]
        indexes = [
            models.Index(fields=["widget", "state", "created_at"], name="support_ticket_queue"),
            models.Index(fields=["widget", "chat", "state"], name="support_ticket_chat"),
            models.Index(fields=["widget", "-updated_at"], name="support_ticket_updated"),
        ]


class ChatAccount(models.Model):
    """What the service knows of the application account behind a chat (`chat.account`). Written
    only by the signed account-link endpoints and the ticket intake: the service never infers an
    identity itself. No row means `link: anonymous`."""

    class Link(models.TextChoices):
        ANONYMOUS = "anonymous"
        AWAITING_CODE = "awaiting_code"
        VERIFIED = "verified"
        NONE = "none"

    widget = models.ForeignKey(Widget, on_delete=models.CASCADE, related_name="+")
    chat = models.OneToOneField(Chat, on_delete=models.CASCADE, related_name="support_account")
    link = models.CharField(max_length=16, choices=Link.choices, default=Link.ANONYMOUS)
    app_user_id = models.CharField(max_length=128, null=True, blank=True)
    email = models.CharField(max_length=255, null=True, blank=True)
    link_source = models.CharField(max_length=16, null=True, blank=True)
    identity_expires_at = models.DateTimeField(null=True, blank=True)
    grant_expires_at = models.DateTimeField(null=True, blank=True)
    # The assistant's read grant of the account-link call: a Fernet token under the webhooks' key
    # set (WEBHOOK_SECRET_KEYS), never returned by any endpoint; revoke clears it.
    grant_token_encrypted = models.TextField(blank=True, default="")
    verification_ref = models.CharField(max_length=128, null=True, blank=True)
    code_expires_at = models.DateTimeField(null=True, blank=True)
    # The e-mail code of the chat (rule 8 of the support reply rules): only its keyed hash, the
    # mailbox it went to and the attempts typed are kept; neither the code nor that mailbox is shown.
    code_hash = models.CharField(max_length=64, blank=True, default="")
    code_email = models.CharField(max_length=254, blank=True, default="")
    code_attempts = models.PositiveSmallIntegerField(default=0)
    # When the codes of the last hour were mailed (ISO times): at most a few per hour per chat.
    code_sent_at = models.JSONField(default=list, blank=True)
    # Customer messages that were checked as codes: the support API shows them redacted.
    code_message_ids = models.JSONField(default=list, blank=True)
    last_code_result = models.CharField(max_length=24, null=True, blank=True)
    last_code_at = models.DateTimeField(null=True, blank=True)
    email_requested = models.BooleanField(default=False)
    # An app-ticket chat whose account was revoked stays hidden until the next signed intake.
    hidden_until_intake = models.BooleanField(default=False)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [models.Index(fields=["widget", "app_user_id"], name="support_account_user")]
