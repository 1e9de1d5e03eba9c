"""Proactive messages (product-decisions.md "The widget as the owner's platform"): what the widget
says first, by rules it evaluates in the visitor's page, and per-day counts of what it did."""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from apps.agents.models import Agent
from apps.core.models import Widget

# The seven languages of the widget (apps.widget's vocabulary; a test checks they agree).
LANGUAGES = ("ru", "en", "el", "de", "es", "ar", "zh")


class ProactiveMessage(models.Model):
    """`name` is unique per widget, enforced by the constraint below (two concurrent writers of one
    name: the second fails on it and answers 409 `name_taken`). `rules` and `text_i18n` hold what the
    API validated (apps.proactive.api.serializers states the ranges)."""

    class Frequency(models.TextChoices):
        ONCE = "once"
        ONCE_PER_SESSION = "once_per_session"
        ALWAYS = "always"

    widget = models.ForeignKey(Widget, on_delete=models.CASCADE, related_name="+")
    name = models.CharField(max_length=100)
    enabled = models.BooleanField(default=True)
    text_i18n = models.JSONField(default=dict)
    # The sender the visitor sees; null: the widget's name. An agent deleted later leaves it null.
    agent = models.ForeignKey(Agent, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    rules = models.JSONField(default=dict)
    frequency = models.CharField(max_length=16, choices=Frequency.choices, default=Frequency.ONCE)
    priority = models.IntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["widget", "name"], name="proactive_name_unique_per_widget")]
        indexes = [models.Index(fields=["widget", "id"], name="proactive_widget")]

    def __str__(self) -> str:
        return f"{self.name} (widget {self.widget_id})"


class ProactiveCount(models.Model):
    """Shown, opened and replied of one message on one day (the business time zone): the statistics
    read these rows, never events. One row per message and day, incremented in place."""

    widget = models.ForeignKey(Widget, on_delete=models.CASCADE, related_name="+")
    message = models.ForeignKey(ProactiveMessage, on_delete=models.CASCADE, related_name="+")
    day = models.DateField()
    shown = models.PositiveIntegerField(default=0)
    opened = models.PositiveIntegerField(default=0)
    replied = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["widget", "message", "day"], name="proactive_count_day")]

    def __str__(self) -> str:
        return f"{self.message_id} {self.day}"
