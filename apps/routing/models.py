"""Routing (product-decisions.md "Routing that never loses a visitor"): the widget's routing settings,
each chat's place in the queue and its assignment history, each operator's last assignment (round
robin), SLA policies and the clocks they start.

The queue is the set of `ChatRouting` rows with `queue_since` set, served by `queue_since, chat_id`.
Every assignment decision of a widget holds its `RoutingSettings` row locked (apps.routing.services),
so two decisions of one widget never interleave: a chat is never assigned twice and a slot never
filled twice, on PostgreSQL (a row lock) and on the embedded SQLite (IMMEDIATE write transactions).

Timers (re-routing, SLA breaches) are due times stored on rows with a partial index over the rows
still due, so the beat job reads only what is due, however many chats are open.
"""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from apps.agents.models import Agent, Department
from apps.chats.models import Chat
from apps.core.models import Widget


class RoutingSettings(models.Model):
    class Mode(models.TextChoices):
        MANUAL = "manual"
        ROUND_ROBIN = "round_robin"
        LEAST_BUSY = "least_busy"

    widget = models.OneToOneField(Widget, primary_key=True, on_delete=models.CASCADE, related_name="routing_settings")
    mode = models.CharField(max_length=16, choices=Mode.choices, default=Mode.MANUAL)
    default_capacity = models.PositiveSmallIntegerField(default=3)
    reroute_after_seconds = models.PositiveIntegerField(null=True, blank=True)
    show_queue_position = models.BooleanField(default=True)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name_plural = "routing settings"

    def __str__(self) -> str:
        return f"routing of widget {self.widget_id} ({self.mode})"


class ChatRouting(models.Model):
    """A chat's routing state. `queued_at`: when it first began to wait for a person (null if it never
    did); `queue_since` is set while it waits in the queue now (its order key: a chat handed back to
    the queue keeps its original time, so it goes to the head). `timed_out` lists the operators
    who let the re-route timer run out on this chat (never chosen again for it)."""

    class By(models.TextChoices):
        ROUTING = "routing"
        AGENT = "agent"
        API = "api"
        AUTOMATION = "automation"

    chat = models.OneToOneField(Chat, primary_key=True, on_delete=models.CASCADE, related_name="routing")
    widget = models.ForeignKey(Widget, on_delete=models.CASCADE, related_name="+")
    queued_at = models.DateTimeField(null=True, blank=True)
    queue_since = models.DateTimeField(null=True, blank=True)
    assigned_at = models.DateTimeField(null=True, blank=True)
    assigned_by = models.CharField(max_length=16, choices=By.choices, blank=True, default="")
    # Seconds from `queued_at` to the first assignment after it (the estimated wait's sample).
    wait_seconds = models.FloatField(null=True, blank=True)
    reroutes = models.PositiveIntegerField(default=0)
    reroute_due_at = models.DateTimeField(null=True, blank=True)
    timed_out = models.JSONField(default=list, blank=True)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [
            # The queue, in order.
            models.Index(
                fields=["widget", "queue_since", "chat"],
                name="routing_queue",
                condition=models.Q(queue_since__isnull=False),
            ),
            # The re-route timer's beat job: only the rows still due.
            models.Index(
                fields=["reroute_due_at"], name="routing_reroute_due", condition=models.Q(reroute_due_at__isnull=False)
            ),
            # The estimated wait: the widget's latest assignments that waited.
            models.Index(
                fields=["widget", "-assigned_at"],
                name="routing_recent_waits",
                condition=models.Q(wait_seconds__isnull=False),
            ),
        ]

    def __str__(self) -> str:
        return f"routing of chat {self.chat_id}"


class OperatorRouting(models.Model):
    """When routing last gave the operator a chat (round robin takes the one assigned longest ago),
    and since when they have been offline."""

    agent = models.OneToOneField(Agent, primary_key=True, on_delete=models.CASCADE, related_name="routing")
    widget = models.ForeignKey(Widget, on_delete=models.CASCADE, related_name="+")
    last_assigned_at = models.DateTimeField(null=True, blank=True)
    # Set when the operator's last console socket closed; their chats go back to the queue once it is
    # older than the grace (apps.routing.services.OFFLINE_GRACE), unless they came back.
    offline_since = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [
            models.Index(
                fields=["offline_since"],
                name="operator_routing_offline",
                condition=models.Q(offline_since__isnull=False),
            ),
        ]


class SlaPolicy(models.Model):
    widget = models.ForeignKey(Widget, on_delete=models.CASCADE, related_name="+")
    name = models.CharField(max_length=200)
    department = models.ForeignKey(Department, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    first_response_seconds = models.PositiveIntegerField(null=True, blank=True)
    next_response_seconds = models.PositiveIntegerField(null=True, blank=True)
    resolution_seconds = models.PositiveIntegerField(null=True, blank=True)
    business_hours_only = models.BooleanField(default=False)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name = "SLA policy"
        verbose_name_plural = "SLA policies"
        constraints = [
            models.UniqueConstraint(
                fields=["widget"], condition=models.Q(department__isnull=True), name="sla_one_default_per_widget"
            ),
            models.UniqueConstraint(fields=["widget", "department"], name="sla_one_per_department"),
        ]
        indexes = [models.Index(fields=["widget", "id"], name="sla_policy_widget")]

    def __str__(self) -> str:
        return f"{self.name} (widget {self.widget_id})"


class SlaClock(models.Model):
    """One SLA clock of a chat: started when its event happened, due at `due_at` (business seconds
    counted when the policy asks), stopped when met (or when the chat no longer needs it), breached
    at most once (`breached_at`). One row per chat, kind and due time."""

    class Kind(models.TextChoices):
        FIRST_RESPONSE = "first_response"
        NEXT_RESPONSE = "next_response"
        RESOLUTION = "resolution"

    widget = models.ForeignKey(Widget, on_delete=models.CASCADE, related_name="+")
    chat = models.ForeignKey(Chat, on_delete=models.CASCADE, related_name="sla_clocks")
    policy_id = models.BigIntegerField(null=True, blank=True)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    started_at = models.DateTimeField()
    due_at = models.DateTimeField()
    stopped_at = models.DateTimeField(null=True, blank=True)
    # Met when stopped before any breach; breached once, when the timer found it due.
    met = models.BooleanField(null=True, blank=True)
    breached_at = models.DateTimeField(null=True, blank=True)
    # Set once, when the clock entered its warning window (apps.routing.sla.warn_due): the assignee
    # is told the chat is about to breach.
    warned_at = models.DateTimeField(null=True, blank=True)
    # The chat's routing owner when the clock was decided (per-agent statistics); a plain id.
    agent_id = models.BigIntegerField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["chat", "kind", "due_at"], name="sla_clock_once_per_due"),
        ]
        indexes = [
            # The breach timer's beat job: running clocks not yet breached, by due time.
            models.Index(
                fields=["due_at"],
                name="sla_clock_running",
                condition=models.Q(stopped_at__isnull=True, breached_at__isnull=True),
            ),
            models.Index(fields=["chat", "kind"], name="sla_clock_chat"),
            # The statistics: decisions in a window.
            models.Index(
                fields=["widget", "breached_at"],
                name="sla_clock_breached",
                condition=models.Q(breached_at__isnull=False),
            ),
            models.Index(fields=["widget", "stopped_at"], name="sla_clock_met", condition=models.Q(met=True)),
        ]

    def __str__(self) -> str:
        return f"{self.kind} clock of chat {self.chat_id}"
