"""Automation rules ("when <event>, if <conditions>, then <actions>") and the log of their runs.

A widget's rules are read by the workers once per rule-set version (`RuleSet.version`, changed in
the transaction of every write to the widget's rules; apps.automation.runtime caches the compiled
set under it), the AI configuration's pattern.

The log is one row per evaluated event (`AutomationEvaluation`: the version it ran at, and the rules
that matched or failed with their detail). Which rules an event ran is the version's membership
(`RuleSetMember`, written with the version), so a rule's runs are the evaluations of its event at
the versions it belongs to, `not_matched` unless the row names it (apps.automation.selectors.list_runs)."""

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


class Outcome(models.TextChoices):
    MATCHED = "matched"
    NOT_MATCHED = "not_matched"
    FAILED = "failed"


def new_version() -> int:
    """Random rather than counted: a row deleted and made again never repeats a cached version."""
    return secrets.randbits(62)


class RuleSet(models.Model):
    """The version of a widget's rules: one row per widget that ever had a rule."""

    widget = models.OneToOneField(Widget, on_delete=models.CASCADE, primary_key=True, related_name="+")
    version = models.BigIntegerField(default=new_version)
    # when `version` last changed: the trim forgets older versions' memberships only well after it
    changed_at = models.DateTimeField(default=timezone.now)


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


class RuleSetMember(models.Model):
    """A rule enabled at a version of its widget's rules, with its event at that version: an event
    evaluated at `version` ran this rule when the events match."""

    widget = models.ForeignKey(Widget, on_delete=models.CASCADE, related_name="+", db_index=False)
    version = models.BigIntegerField()
    event = models.CharField(max_length=32, choices=[(name, name) for name in EVENTS])
    rule = models.ForeignKey(AutomationRule, on_delete=models.CASCADE, related_name="+", db_index=False)

    class Meta:
        constraints = [
            # a rule's versions (its runs' lookup, and the cascade of a deleted rule)
            models.UniqueConstraint(fields=["rule", "version"], name="automation_member_rule_version"),
        ]
        indexes = [models.Index(fields=["widget", "version"], name="automation_member_widget")]


class AutomationEvaluation(models.Model):
    """One event evaluated against the widget's rules of `event` at `version` (every member of the
    version for that event ran once). `results` holds only the rules that matched or failed:
    {"<rule id>": [outcome, detail]}; every other member's run was `not_matched`."""

    widget = models.ForeignKey(Widget, on_delete=models.CASCADE, related_name="+", db_index=False)
    version = models.BigIntegerField()
    event = models.CharField(max_length=32, choices=[(name, name) for name in EVENTS])
    at = models.DateTimeField(default=timezone.now)
    # the chat the event was about (no foreign key: the log outlives a deleted chat)
    chat_id = models.BigIntegerField(null=True, blank=True)
    results = models.JSONField(default=dict, blank=True)

    class Meta:
        indexes = [
            # a rule's runs (the evaluations of its versions, newest first) and the trim's deletes
            models.Index(fields=["widget", "version", "event", "id"], name="automation_evaluation_version"),
        ]

    def __str__(self) -> str:
        return f"{self.event} at {self.at:%Y-%m-%d %H:%M:%S} (widget {self.widget_id})"
