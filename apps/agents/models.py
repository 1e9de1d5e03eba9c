"""Agents: the people and bots that answer chats. The API arrives with the agents issue; the model
exists from the start because chats, messages and statistics name agents."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from apps.core.models import Widget


class Agent(models.Model):
    class Type(models.TextChoices):
        HUMAN = "human"
        AI = "ai"
        WEBHOOK = "webhook"

    class Status(models.TextChoices):
        ACTIVE = "active"
        RELAXATION = "relaxation"
        BANNED = "banned"

    class Role(models.TextChoices):
        OWNER = "owner"
        OPERATOR = "operator"

    widget = models.ForeignKey(Widget, on_delete=models.CASCADE, related_name="agents")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="agents"
    )
    name = models.CharField(max_length=150)
    surname = models.CharField(max_length=150, blank=True, default="")
    email = models.EmailField(blank=True, default="")
    avatar = models.FileField(upload_to="avatars/", null=True, blank=True)
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.OPERATOR)
    type = models.CharField(max_length=16, choices=Type.choices, default=Type.HUMAN)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ACTIVE)
    show_in_header = models.BooleanField(default=True)
    ai_assistant_id = models.BigIntegerField(null=True, blank=True)
    # The owner's own agent row: never deletable through the API.
    is_owner = models.BooleanField(default=False)
    # Open chats routing gives this operator at most (null: the widget's routing default_capacity).
    capacity = models.PositiveSmallIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [
            models.Index(fields=["widget", "status", "-created_at"], name="agent_widget_status"),
            models.Index(fields=["widget", "type"], name="agent_widget_type"),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["widget"], condition=models.Q(is_owner=True), name="agent_one_owner_per_widget"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.type}, widget {self.widget_id})"


class Department(models.Model):
    """A group of agents serving some channels on a schedule. Its API arrives with the agents
    issue; chats already name their department (and internal department rooms)."""

    widget = models.ForeignKey(Widget, on_delete=models.CASCADE, related_name="departments")
    name = models.CharField(max_length=200)
    channels = models.JSONField(default=list)
    agents = models.ManyToManyField(Agent, related_name="departments", blank=True)
    # Monday..Sunday: "full", {"from": "HH:MM", "to": "HH:MM"} or None (closed).
    schedule = models.JSONField(default=dict)
    avatar = models.FileField(upload_to="departments/", null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        indexes = [models.Index(fields=["widget", "-created_at"], name="department_widget_created")]

    def __str__(self) -> str:
        return f"{self.name} (widget {self.widget_id})"


class Invitation(models.Model):
    """An e-mailed invitation to become a human operator of one widget.

    Only a SHA-256 hash of the link token is stored; the plaintext exists in the e-mail alone.
    Outstanding (unexpired, unaccepted, unrevoked) invitations reserve a seat of the account.
    """

    widget = models.ForeignKey(Widget, on_delete=models.CASCADE, related_name="invitations")
    email = models.EmailField()
    token_hash = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()
    accepted_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    agent = models.ForeignKey(Agent, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")

    class Meta:
        indexes = [
            models.Index(fields=["widget", "-created_at"], name="invitation_widget_created"),
            models.Index(
                fields=["widget", "expires_at"],
                name="invitation_outstanding",
                condition=models.Q(accepted_at__isnull=True, revoked_at__isnull=True),
            ),
        ]

    def __str__(self) -> str:
        return f"invitation of {self.email} (widget {self.widget_id})"

    def state(self, now=None) -> str:
        if self.accepted_at is not None:
            return "accepted"
        if self.revoked_at is not None:
            return "revoked"
        if self.expires_at <= (now or timezone.now()):
            return "expired"
        return "pending"


class AgentEvent(models.Model):
    """One row of an agent's event log. `type_code` is the raw internal code; the slug and the
    Russian console message are derived from it (apps.agents.events_log), so codes recorded before
    their slug exists are kept and read back as `unknown`."""

    widget = models.ForeignKey(Widget, on_delete=models.CASCADE, related_name="+")
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="events")
    type_code = models.PositiveIntegerField()
    created_at = models.DateTimeField(default=timezone.now)
    extra = models.JSONField(default=dict, blank=True)

    class Meta:
        indexes = [models.Index(fields=["widget", "agent", "-created_at"], name="agentevent_agent_created")]

    def __str__(self) -> str:
        return f"agent {self.agent_id} event {self.type_code}"
