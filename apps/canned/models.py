"""Canned responses: an operator's ready-made replies, found by `shortcut`, with variables that are
filled in for one chat when the reply is rendered (apps.canned.variables)."""

from __future__ import annotations

from django.core.validators import RegexValidator
from django.db import models
from django.utils import timezone

from apps.core.models import Widget

# The seven languages of the widget (apps.widget's vocabulary; a test checks they agree).
LANGUAGES = ("ru", "en", "el", "de", "es", "ar", "zh")
SHORTCUT_PATTERN = r"[a-z0-9_-]{1,32}"
TEXT_MAX = 4000


class CannedResponse(models.Model):
    """`shortcut` is unique per widget, enforced by the constraint below (two concurrent writers of
    one shortcut: the second fails on it and answers 409 `shortcut_taken`). `language` null: any."""

    widget = models.ForeignKey(Widget, on_delete=models.CASCADE, related_name="+")
    shortcut = models.CharField(max_length=32, validators=[RegexValidator(rf"^{SHORTCUT_PATTERN}$")])
    title = models.CharField(max_length=100)
    text = models.TextField()
    language = models.CharField(max_length=2, null=True, blank=True, choices=[(code, code) for code in LANGUAGES])
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["widget", "shortcut"], name="canned_shortcut_unique_per_widget")]

    def __str__(self) -> str:
        return f"/{self.shortcut} (widget {self.widget_id})"
