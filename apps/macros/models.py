"""Macros: a named list of actions (apps.automation.actions) an operator runs on a chat in one go.
A shared macro (`all`) is every operator's; a personal one belongs to its operator (`agent`) and no
other operator sees it."""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from apps.agents.models import Agent
from apps.core.models import Widget

NAME_MAX = 100


class Macro(models.Model):
    class Visibility(models.TextChoices):
        ALL = "all"
        PERSONAL = "personal"

    widget = models.ForeignKey(Widget, on_delete=models.CASCADE, related_name="+")
    name = models.CharField(max_length=NAME_MAX)
    visibility = models.CharField(max_length=16, choices=Visibility.choices, default=Visibility.ALL)
    # The operator a personal macro belongs to (it goes with them); null for a shared macro.
    agent = models.ForeignKey(Agent, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    # The validated, normalised list (apps.automation.actions.validate_actions).
    actions = models.JSONField(default=list)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=(
                    models.Q(visibility="all", agent__isnull=True)
                    | models.Q(visibility="personal", agent__isnull=False)
                ),
                name="macro_personal_has_agent",
            )
        ]
        # What one operator's picker reads: the widget's shared macros and their own, by name.
        indexes = [models.Index(fields=["widget", "agent", "name"], name="macro_widget_agent_name")]

    def __str__(self) -> str:
        return f"{self.name} (widget {self.widget_id})"
