"""Web Push subscriptions: one row per operator (agent) and browser (device), with what that device
is told. The push service's endpoint and the browser's keys are what RFC 8030/8291 need to reach it;
they are not secrets of ours, but the endpoint is a capability URL and is never shown back."""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from apps.agents.models import Agent
from apps.core.models import Widget

KINDS = ("assigned", "queue", "mention", "sla")


class PushSubscription(models.Model):
    """A browser of `agent` that allowed push. The four choices say which kinds of news reach it;
    `previews` puts the message's words into the notification (off: only who and where)."""

    widget = models.ForeignKey(Widget, on_delete=models.CASCADE, related_name="+")
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="+")
    endpoint = models.URLField(max_length=1024)
    p256dh = models.CharField(max_length=128)
    auth = models.CharField(max_length=64)
    user_agent = models.CharField(max_length=120, blank=True, default="")
    # The console's language when the device subscribed: its notifications are written in it.
    language = models.CharField(max_length=12, default="en")
    assigned = models.BooleanField(default=True)
    queue = models.BooleanField(default=True)
    mention = models.BooleanField(default=True)
    sla = models.BooleanField(default=True)
    previews = models.BooleanField(default=False)
    created_at = models.DateTimeField(default=timezone.now)
    last_success_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            # Tenant first: it is also the index notify() and the Notifications section read by
            # (one agent's devices).
            models.UniqueConstraint(fields=["widget", "agent", "endpoint"], name="push_subscription_once_per_device"),
        ]

    def __str__(self) -> str:
        return f"push subscription {self.pk} of agent {self.agent_id}"

    def chose(self, kind: str) -> bool:
        if kind not in KINDS:
            raise ValueError(f"unknown notification kind {kind!r}")
        return bool(getattr(self, kind))
