"""A test-only widget-scoped resource to exercise the core (tenancy, pagination, idempotency)."""

from django.db import models
from django.utils import timezone

from apps.core.models import Widget


class Note(models.Model):
    widget = models.ForeignKey(Widget, on_delete=models.CASCADE)
    title = models.CharField(max_length=100)
    agent = models.ForeignKey("agents.Agent", null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [models.Index(fields=["widget", "-created_at", "-id"])]
