"""External (webhook) operators: an `Agent` of type `webhook` plus its row here, the signed calls
made to it (each with the `causation_id` its reply must name) and its `delivery.test` probes.

The calls travel through the webhook engine: each URL an operator has used is a
`webhooks.Endpoint` (its signing secret lives there, encrypted, with the rotation overlap window),
each call a `webhooks.Delivery` row with retries and an attempt log."""

from __future__ import annotations

import secrets
import uuid

from django.db import models
from django.utils import timezone

from apps.agents.models import Agent
from apps.chats.models import Chat, Message
from apps.core.models import Widget
from apps.webhooks.models import Delivery, Endpoint

ENDPOINT_OWNER = "external_operator"


def new_public_id() -> str:
    return "xop_" + secrets.token_hex(12)


def new_test_id() -> str:
    return "xtest_" + secrets.token_hex(12)


class ExternalOperator(models.Model):
    """`state` is what the API shows: `testing`, `active`, `paused`, `revoked`, or `rotating` while a
    URL change drains the old endpoint (`draining`); `resume_state` is where a finished rotation
    returns. Only `active` operators receive visitor messages; `testing` ones take probes only."""

    class State(models.TextChoices):
        TESTING = "testing"
        ACTIVE = "active"
        PAUSED = "paused"
        REVOKED = "revoked"
        ROTATING = "rotating"

    widget = models.ForeignKey(Widget, on_delete=models.CASCADE, related_name="+")
    agent = models.OneToOneField(Agent, on_delete=models.CASCADE, related_name="external_operator")
    public_id = models.CharField(max_length=40, unique=True, default=new_public_id, editable=False)
    name = models.CharField(max_length=150)
    url = models.CharField(max_length=2048)
    state = models.CharField(max_length=16, choices=State.choices, default=State.ACTIVE)
    resume_state = models.CharField(max_length=16, choices=State.choices, blank=True, default="")
    endpoint = models.ForeignKey(Endpoint, on_delete=models.PROTECT, related_name="+")
    draining = models.ForeignKey(Endpoint, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    secret_rotated_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)
    deleted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [
            models.Index(
                fields=["widget", "-created_at", "-id"],
                name="extop_widget_created",
                condition=models.Q(deleted_at__isnull=True),
            ),
            models.Index(
                fields=["widget", "state"], name="extop_widget_state", condition=models.Q(deleted_at__isnull=True)
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.public_id}, {self.state})"


class Call(models.Model):
    """One signed call about a visitor message to one operator. The operator's reply names
    `causation_id`; `consumed_at` is set once, by the first reply that passes validation."""

    widget = models.ForeignKey(Widget, on_delete=models.CASCADE, related_name="+")
    operator = models.ForeignKey(ExternalOperator, on_delete=models.CASCADE, related_name="calls")
    chat = models.ForeignKey(Chat, on_delete=models.CASCADE, related_name="+")
    message = models.ForeignKey(Message, on_delete=models.CASCADE, related_name="+")
    causation_id = models.UUIDField(unique=True, default=uuid.uuid4, editable=False)
    type = models.CharField(max_length=32)
    delivery = models.OneToOneField(Delivery, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)
    consumed_at = models.DateTimeField(null=True, blank=True)
    outcome = models.CharField(max_length=16, blank=True, default="")

    class Meta:
        indexes = [models.Index(fields=["widget", "chat", "operator"], name="extcall_chat_operator")]
        constraints = [
            models.UniqueConstraint(fields=["operator", "message"], name="extcall_once_per_operator_message"),
        ]


class Probe(models.Model):
    """One `delivery.test` call, pollable by `public_id` until its delivery settles."""

    widget = models.ForeignKey(Widget, on_delete=models.CASCADE, related_name="+")
    operator = models.ForeignKey(ExternalOperator, on_delete=models.CASCADE, related_name="probes")
    public_id = models.CharField(max_length=40, unique=True, default=new_test_id, editable=False)
    causation_id = models.UUIDField(default=uuid.uuid4, editable=False)
    delivery = models.OneToOneField(Delivery, on_delete=models.CASCADE, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [models.Index(fields=["widget", "operator", "-created_at"], name="extprobe_operator_created")]
