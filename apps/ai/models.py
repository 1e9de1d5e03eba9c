"""AI configuration of a widget: settings and phrase overrides, assistants (the brain), provider
credentials (bring your own LLM key), the application-assistant integration binding, alerts and
demand signals.

An AI operator (the identity replies are attributed to) is an `ai`-type `agents.Agent` whose
`ai_assistant_id` names its assistant; it is listed among the agents. Secrets (`api_key`,
`signing_secret`) are stored encrypted with the webhooks' rotatable key set, never in clear.
"""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from apps.agents.models import Agent
from apps.chats.models import Chat, Message
from apps.core.models import ApiToken, Widget

PROVIDERS = ("openai", "anthropic", "gigachat", "openai_compatible")


def new_config_version() -> int:
    """A fresh `AiSettings.config_version`: random rather than counted, so a row that replaces a
    deleted one (same widget, even the same id) never matches what a process cached for the old one."""
    import secrets

    return secrets.randbits(62)


class AiSettings(models.Model):
    """The widget-wide AI switches (one row per widget, created on first write)."""

    widget = models.OneToOneField(Widget, on_delete=models.CASCADE, related_name="ai_settings")
    enabled = models.BooleanField(default=False)
    # When `enabled` last went on: the AI answers only visitor messages written since (a message
    # left while it was off is the people's to answer). Null on rows enabled before it was kept.
    enabled_at = models.DateTimeField(null=True, blank=True)
    rag_enabled = models.BooleanField(default=False)
    shadow_mode = models.BooleanField(default=False)
    autonomous_tuning_enabled = models.BooleanField(default=False)
    presence_context_enabled = models.BooleanField(default=True)
    takeover_timeout_sec = models.PositiveIntegerField(default=300)
    # When the AI hands a chat to people, a private note of the AI operator summarises it for them.
    handover_summary = models.BooleanField(default=True)
    # The persona text of the pre-assistant configuration; `migrate` seeds an assistant from it.
    legacy_persona = models.TextField(blank=True, default="")
    legacy_system_prompt = models.TextField(blank=True, default="")
    legacy_greeting = models.TextField(blank=True, default="")
    # {key: {lang: text}}: the owner's phrase overrides (defaults live in apps.ai.phrases).
    phrases = models.JSONField(default=dict, blank=True)
    # Changes in the transaction of every write to what the AI operator answers with: these settings,
    # the widget's assistants, AI operators and credentials (apps.ai.config). A worker keeps that
    # configuration per process and reads only this number per answer.
    config_version = models.BigIntegerField(default=new_config_version, editable=False)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "AI settings"
        verbose_name_plural = "AI settings"

    def __str__(self) -> str:
        return f"AI settings of widget {self.widget_id}"


class Assistant(models.Model):
    widget = models.ForeignKey(Widget, on_delete=models.CASCADE, related_name="ai_assistants")
    name = models.CharField(max_length=200)
    enabled = models.BooleanField(default=True)
    is_default = models.BooleanField(default=False)
    persona = models.TextField(blank=True, default="")
    system_prompt = models.TextField(blank=True, default="")
    temperature = models.FloatField(null=True, blank=True)
    rag_enabled = models.BooleanField(default=False)
    # An answer built on knowledge-base chunks carries the documents they came from (`Message.sources`).
    cite_sources = models.BooleanField(default=False)
    escalation_triggers = models.JSONField(default=list, blank=True)
    greeting = models.TextField(blank=True, default="")
    quick_phrases = models.JSONField(default=list, blank=True)
    greeting_i18n = models.JSONField(default=dict, blank=True)
    quick_phrases_i18n = models.JSONField(default=dict, blank=True)
    # Which driver this assistant prefers when it has no credential of its own (a driver code or "").
    provider = models.CharField(max_length=32, blank=True, default="")
    model = models.CharField(max_length=200, blank=True, default="")
    # Set when created by `migrate` (legacy settings) or a marketplace template (its slug).
    origin = models.CharField(max_length=100, blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        indexes = [models.Index(fields=["widget", "-created_at", "-id"], name="ai_assistant_widget_created")]
        constraints = [
            models.UniqueConstraint(
                fields=["widget"], condition=models.Q(is_default=True), name="ai_assistant_one_default"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} (assistant {self.pk}, widget {self.widget_id})"


class Credential(models.Model):
    """A provider credential: widget-wide (no assistant, no operator), an assistant's, or an AI
    operator's. At most one active widget-wide credential per driver."""

    widget = models.ForeignKey(Widget, on_delete=models.CASCADE, related_name="ai_credentials")
    provider = models.CharField(max_length=32)
    api_key_encrypted = models.TextField(blank=True, default="")
    base_url = models.CharField(max_length=2000, blank=True, default="")
    model = models.CharField(max_length=200, blank=True, default="")
    # The model knowledge-base embeddings ask for; blank: the vendor's default embedding model
    # (openai, gigachat) or `model` (openai_compatible).
    embedding_model = models.CharField(max_length=100, blank=True, default="")
    signing_secret_encrypted = models.TextField(blank=True, default="")
    is_active = models.BooleanField(default=True)
    assistant = models.ForeignKey(
        Assistant, null=True, blank=True, on_delete=models.CASCADE, related_name="credentials"
    )
    operator = models.ForeignKey(Agent, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    backup_credential = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="backed_up"
    )
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        indexes = [models.Index(fields=["widget", "-created_at", "-id"], name="ai_credential_widget_created")]
        constraints = [
            models.UniqueConstraint(
                fields=["widget", "provider"],
                condition=models.Q(is_active=True, assistant__isnull=True, operator__isnull=True),
                name="ai_credential_one_active_wide",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.provider} credential {self.pk} (widget {self.widget_id})"

    @property
    def is_widget_wide(self) -> bool:
        return self.assistant_id is None and self.operator_id is None


class IntegrationBinding(models.Model):
    """The application-assistant binding: one per widget; its token is the only signer of the
    signed application-assistant endpoints, with `secret` (48 characters, encrypted)."""

    widget = models.OneToOneField(Widget, on_delete=models.CASCADE, related_name="ai_integration")
    provider = models.CharField(max_length=32)
    api_token = models.ForeignKey(ApiToken, on_delete=models.CASCADE, related_name="+")
    assistant = models.ForeignKey(Assistant, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    credential = models.ForeignKey(Credential, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    secret_encrypted = models.TextField()
    created_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"integration of widget {self.widget_id}"


class Alert(models.Model):
    """Something about the AI the owner should look at (a provider failing, a credential refused)."""

    widget = models.ForeignKey(Widget, on_delete=models.CASCADE, related_name="ai_alerts")
    kind = models.CharField(max_length=64)
    message = models.TextField()
    details = models.JSONField(default=dict, blank=True)
    acknowledged_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [
            models.Index(fields=["widget", "-created_at", "-id"], name="ai_alert_widget_created"),
            models.Index(
                fields=["widget", "-created_at", "-id"],
                name="ai_alert_outstanding",
                condition=models.Q(acknowledged_at__isnull=True),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} alert {self.pk} (widget {self.widget_id})"

    @property
    def state(self) -> str:
        return "unacknowledged" if self.acknowledged_at is None else "acknowledged"


class DemandSignal(models.Model):
    """What visitors asked for that the assistant could not answer (a topic with a count), recorded
    by the AI operator at work (apps.learning.demand names the category of each hand-over)."""

    class Category(models.TextChoices):
        UNANSWERED = "unanswered"
        ESCALATION = "escalation"
        PROVIDER_FAILURE = "provider_failure"
        SAFETY = "safety"

    widget = models.ForeignKey(Widget, on_delete=models.CASCADE, related_name="ai_demand_signals")
    category = models.CharField(max_length=64)
    topic = models.CharField(max_length=500)
    count = models.PositiveIntegerField(default=1)
    sample = models.TextField(blank=True, default="")
    occurred_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [models.Index(fields=["widget", "-occurred_at", "-id"], name="ai_demand_widget_occurred")]

    def __str__(self) -> str:
        return f"{self.category}: {self.topic} (widget {self.widget_id})"


class ReplyClaim(models.Model):
    """The AI operator's claim on one visitor message: at most one answer per message, whichever
    worker runs the task (a redelivered task, two workers racing). Taken by a unique insert just
    before the provider call; a `working` claim older than the lease (its worker died) may be taken
    over, and only the holder of the current `token` may post the answer."""

    class State(models.TextChoices):
        WORKING = "working"
        ANSWERED = "answered"  # the answer was posted (visible, or a note in shadow mode)
        HANDED_OFF = "handed_off"  # escalation, empty answer or provider failure: handed to people
        SUPERSEDED = "superseded"  # a newer visitor message arrived meanwhile: that one is answered
        DROPPED = "dropped"  # a person answered (or the switch went off) while the provider worked

    widget = models.ForeignKey(Widget, on_delete=models.CASCADE, related_name="+")
    chat = models.ForeignKey(Chat, on_delete=models.CASCADE, related_name="+")
    message = models.OneToOneField(Message, on_delete=models.CASCADE, related_name="+")
    state = models.CharField(max_length=16, choices=State.choices, default=State.WORKING)
    token = models.CharField(max_length=32)
    attempts = models.PositiveSmallIntegerField(default=1)
    reply = models.ForeignKey(Message, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    # transform's transformation, or the provider failure kind
    detail = models.CharField(max_length=64, blank=True, default="")
    provider_ms = models.FloatField(null=True, blank=True)
    claimed_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["widget", "-claimed_at"], name="ai_reply_claim_widget")]

    def __str__(self) -> str:
        return f"AI reply claim on message {self.message_id} ({self.state})"
