"""Self-learning and improvement wishes: how an assistant's persona and system prompt change under
the owner's control, and the record of every change.

- `TuningCycle`: one autonomous cycle (queued by `tune` or the daily beat job): evidence from recent
  chats goes to the provider, which proposes a persona/system-prompt patch; an applied patch is a
  `PersonaVersion` under probation.
- `PersonaVersion`: per assistant, counting up; both snapshots (`persona`, `system_prompt` as that
  version made them) and the pair it replaced (`previous_*`). A version with `probation_until`
  started a probation window.
- `Wish`: the owner's free-text improvement request; the provider proposes the rewrite
  asynchronously, the owner previews, approves (applies the stored proposal), rejects or reverts.
  `WishEvent` rows are its decision trail.
- `HistoryEntry`: the append-only audit trail (services only ever create rows).
"""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from apps.ai.models import Assistant
from apps.core.models import Widget


class TuningCycle(models.Model):
    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        APPLIED = "applied"  # produced a persona version
        NO_CHANGE = "no_change"  # the provider proposed nothing new
        HELD = "held"  # the proposal adds content: it waits for the owner as a wish (services._hold_for_owner)
        FAILED = "failed"

    class Trigger(models.TextChoices):
        MANUAL = "manual"  # POST /v1/ai/learning/tune
        SCHEDULED = "scheduled"  # the daily beat job

    widget = models.ForeignKey(Widget, on_delete=models.CASCADE, related_name="+")
    assistant = models.ForeignKey(Assistant, on_delete=models.CASCADE, related_name="tuning_cycles")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    trigger = models.CharField(max_length=16, choices=Trigger.choices, default=Trigger.MANUAL)
    token_id = models.BigIntegerField(null=True, blank=True)
    evidence_from = models.DateTimeField()
    evidence_to = models.DateTimeField()
    # {escalations, low_ratings, unanswered, chats}: what the cycle was given.
    evidence = models.JSONField(default=dict, blank=True)
    proposed_persona = models.TextField(blank=True, default="")
    proposed_system_prompt = models.TextField(blank=True, default="")
    rationale = models.TextField(blank=True, default="")
    error = models.CharField(max_length=100, blank=True, default="")
    version = models.ForeignKey("PersonaVersion", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [
            models.Index(fields=["widget", "assistant", "-created_at", "-id"], name="learning_cycle_assistant"),
            models.Index(
                fields=["widget", "assistant", "-created_at", "-id"],
                name="learning_cycle_applied",
                condition=models.Q(status="applied"),
            ),
        ]

    def __str__(self) -> str:
        return f"tuning cycle {self.pk} ({self.status}, assistant {self.assistant_id})"


class PersonaVersion(models.Model):
    class Source(models.TextChoices):
        TUNE = "tune"
        WISH = "wish"
        REVERT = "revert"

    widget = models.ForeignKey(Widget, on_delete=models.CASCADE, related_name="+")
    assistant = models.ForeignKey(Assistant, on_delete=models.CASCADE, related_name="persona_versions")
    version = models.PositiveIntegerField()
    source = models.CharField(max_length=8, choices=Source.choices)
    persona = models.TextField(blank=True, default="")
    system_prompt = models.TextField(blank=True, default="")
    previous_persona = models.TextField(blank=True, default="")
    previous_system_prompt = models.TextField(blank=True, default="")
    # A revert names the version it went back to and which of its snapshots it restored.
    reverted_to = models.PositiveIntegerField(null=True, blank=True)
    restored = models.CharField(max_length=16, blank=True, default="")
    token_id = models.BigIntegerField(null=True, blank=True)
    probation_until = models.DateTimeField(null=True, blank=True)
    probation_ended_at = models.DateTimeField(null=True, blank=True)
    # "superseded" (another change replaced it) or "reverted"; empty while running or after it ran out.
    probation_outcome = models.CharField(max_length=16, blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["assistant", "version"], name="learning_version_per_assistant"),
        ]
        indexes = [
            models.Index(fields=["widget", "assistant", "-version"], name="learning_version_assistant"),
        ]

    def __str__(self) -> str:
        return f"persona version {self.version} of assistant {self.assistant_id}"


class Wish(models.Model):
    class Status(models.TextChoices):
        PROPOSING = "proposing"  # the provider's rewrite is being made
        PROPOSED = "proposed"  # the rewrite is stored; preview shows it
        PROPOSAL_FAILED = "proposal_failed"
        APPROVED = "approved"
        REJECTED = "rejected"
        REVERTED = "reverted"

    widget = models.ForeignKey(Widget, on_delete=models.CASCADE, related_name="+")
    assistant = models.ForeignKey(Assistant, on_delete=models.CASCADE, related_name="wishes")
    text = models.TextField()
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PROPOSING)
    # The live pair the proposal was made against, and the proposal.
    base_persona = models.TextField(blank=True, default="")
    base_system_prompt = models.TextField(blank=True, default="")
    proposed_persona = models.TextField(blank=True, default="")
    proposed_system_prompt = models.TextField(blank=True, default="")
    rationale = models.TextField(blank=True, default="")
    proposal_error = models.CharField(max_length=100, blank=True, default="")
    applied_version = models.ForeignKey(
        PersonaVersion, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    revert_version = models.ForeignKey(
        PersonaVersion, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [
            models.Index(fields=["widget", "-created_at", "-id"], name="learning_wish_widget_created"),
            models.Index(fields=["widget", "status", "-created_at", "-id"], name="learning_wish_widget_status"),
        ]

    def __str__(self) -> str:
        return f"wish {self.pk} ({self.status}, assistant {self.assistant_id})"


class WishEvent(models.Model):
    """One step of a wish's decision trail (append-only)."""

    class Action(models.TextChoices):
        SUBMITTED = "submitted"
        PROPOSED = "proposed"
        PROPOSAL_FAILED = "proposal_failed"
        APPROVED = "approved"
        REJECTED = "rejected"
        REVERTED = "reverted"

    widget = models.ForeignKey(Widget, on_delete=models.CASCADE, related_name="+")
    wish = models.ForeignKey(Wish, on_delete=models.CASCADE, related_name="events")
    action = models.CharField(max_length=16, choices=Action.choices)
    note = models.CharField(max_length=500, blank=True, default="")
    detail = models.JSONField(default=dict, blank=True)
    token_id = models.BigIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [models.Index(fields=["wish", "created_at", "id"], name="learning_wish_event_wish")]

    def __str__(self) -> str:
        return f"{self.action} of wish {self.wish_id}"


class HistoryEntry(models.Model):
    """The append-only audit trail of persona patches and tuning cycles."""

    class Kind(models.TextChoices):
        CYCLE_QUEUED = "cycle_queued"
        CYCLE_APPLIED = "cycle_applied"
        CYCLE_NO_CHANGE = "cycle_no_change"
        CYCLE_FAILED = "cycle_failed"
        CYCLE_HELD = "cycle_held"
        WISH_APPROVED = "wish_approved"
        WISH_REVERTED = "wish_reverted"
        VERSION_REVERTED = "version_reverted"

    widget = models.ForeignKey(Widget, on_delete=models.CASCADE, related_name="+")
    assistant = models.ForeignKey(Assistant, on_delete=models.CASCADE, related_name="+")
    kind = models.CharField(max_length=20, choices=Kind.choices)
    version = models.PositiveIntegerField(null=True, blank=True)
    cycle = models.ForeignKey(TuningCycle, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    wish = models.ForeignKey(Wish, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    token_id = models.BigIntegerField(null=True, blank=True)
    detail = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name_plural = "history entries"
        indexes = [
            models.Index(fields=["widget", "assistant", "-created_at", "-id"], name="learning_history_assistant"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} (assistant {self.assistant_id})"
