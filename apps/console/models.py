"""What the console keeps of an operator's own: the list filters they saved under a name."""

from __future__ import annotations

from django.db import models
from django.db.models.functions import Lower
from django.utils import timezone

from apps.agents.models import Agent
from apps.core.models import Widget


class SavedView(models.Model):
    """A filter of the chat list (the view, status, channel and search) an operator saved under a
    name, shown beside the views. Each operator row has its own, at most SAVED_VIEWS_MAX."""

    widget = models.ForeignKey(Widget, on_delete=models.CASCADE, related_name="+")
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="saved_views")
    name = models.CharField(max_length=40)
    view = models.CharField(max_length=16)
    status = models.CharField(max_length=16)
    channel = models.CharField(max_length=64, blank=True, default="")
    q = models.CharField(max_length=200, blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(Lower("name"), "agent", name="console_saved_view_name"),
        ]
        indexes = [models.Index(fields=["widget", "agent", "id"], name="console_saved_view_agent")]

    def __str__(self) -> str:
        return f"saved view {self.name!r} of agent {self.agent_id}"


class SetupCode(models.Model):
    """The first run's one row (pk 1) while no account exists: a random nonce from which the setup
    code is derived (apps.console.setup). One row in the database, so every web process prints the
    same code; deleted by the setup that creates the first account, so the code dies with it."""

    id = models.PositiveSmallIntegerField(primary_key=True, default=1)
    nonce = models.CharField(max_length=64)
    created_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return "the first run's setup code"
