"""Automation rules ("when <event>, if <conditions>, then <actions>") and the log of their runs.

A widget's rules are read by the workers once per rule-set version (`RuleSet.version`, changed in
the transaction of every write to the widget's rules; apps.automation.runtime caches the compiled
set under it), the AI configuration's pattern."""

from __future__ import annotations

import secrets

from django.db import models
from django.utils import timezone

from apps.core.models import Widget

EVENTS = (
    "chat.created",
    "message.created",
    "chat.closed",
    "chat.assigned",
    "sla.breached",
    "offline_message.created",
)
RUNS_KEPT = 100


def new_version() -> int:
    """Random rather than counted: a row deleted and made again never repeats a cached version."""
    return secrets.randbits(62)


class RuleSet(models.Model):
    """The version of a widget's rules: one row per widget that ever had a rule."""

    widget = models.OneToOneField(Widget, on_delete=models.CASCADE, primary_key=True, related_name="+")
    version = models.BigIntegerField(default=new_version)


class AutomationRule(models.Model):
    """`conditions` and `actions` are stored as validated and normalised by the services (the API's
    shapes); the rules of one event run in order of id."""

    widget = models.ForeignKey(Widget, on_delete=models.CASCADE, related_name="+")
    name = models.CharField(max_length=100)
    enabled = models.BooleanField(default=True)
    event = models.CharField(max_length=32, choices=[(name, name) for name in EVENTS])
    conditions = models.JSONField(default=list)
    actions = models.JSONField(default=list)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [models.Index(fields=["widget", "event", "id"], name="automation_rule_widget_event")]

    def __str__(self) -> str:
        return f"{self.name} ({self.event}, widget {self.widget_id})"


class AutomationRun(models.Model):
    """One evaluation of a rule for one event; the newest RUNS_KEPT of a rule are kept."""

    class Outcome(models.TextChoices):
        MATCHED = "matched"
        NOT_MATCHED = "not_matched"
        FAILED = "failed"

    widget = models.ForeignKey(Widget, on_delete=models.CASCADE, related_name="+", db_index=False)
    rule = models.ForeignKey(AutomationRule, on_delete=models.CASCADE, related_name="runs", db_index=False)
    at = models.DateTimeField(default=timezone.now)
    # the chat the event was about (no foreign key: the log outlives a deleted chat)
    chat_id = models.BigIntegerField(null=True, blank=True)
    outcome = models.CharField(max_length=16, choices=Outcome.choices)
    detail = models.CharField(max_length=500, blank=True, default="")

    class Meta:
        indexes = [
            models.Index(fields=["widget", "rule", "-id"], name="automation_run_widget_rule"),
            # the trim and the cascade of a deleted rule find a rule's rows by this one
            models.Index(fields=["rule", "-id"], name="automation_run_rule"),
        ]
