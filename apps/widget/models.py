"""Stored widget settings and uploaded launcher icons.

`WidgetSettings.values` holds only the keys a caller has written: a key that is absent (never
written, or cleared with an explicit null) takes its render default from
`apps.widget.settings_schema`, which is the one definition of every field. The row is created on
the first write and locked (`select_for_update`) by every write, which merges only the keys that
write names, so two concurrent PATCHes of different fields both survive.
"""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from apps.core.models import File, Widget


class WidgetSettings(models.Model):
    """One row per widget: the stored (explicitly written) settings keys and the revisions."""

    widget = models.OneToOneField(Widget, on_delete=models.CASCADE, primary_key=True, related_name="settings_row")
    values = models.JSONField(default=dict, blank=True)
    # Bumped whenever the effective value of a localization-policy field or the translation matrix
    # changes; read back as `widget_language_policy_revision` and its alias `widget_translation_revision`.
    language_policy_revision = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name_plural = "widget settings"

    def __str__(self) -> str:
        return f"settings of widget {self.widget_id}"


class WidgetIcon(models.Model):
    """A launcher icon uploaded through POST /v1/widget/icons, selectable as `custom:{file_id}`.

    `file` is the private upload (readable through the files API by its id); `image` is the public
    copy under `icons/` that the visitor widget loads (the media route serves `icons/` publicly).
    """

    class Format(models.TextChoices):
        PNG = "png"
        WEBP = "webp"
        GIF = "gif"

    widget = models.ForeignKey(Widget, on_delete=models.CASCADE, related_name="launcher_icons")
    file = models.OneToOneField(File, on_delete=models.CASCADE, related_name="launcher_icon")
    image = models.FileField(upload_to="icons/", max_length=300)
    format = models.CharField(max_length=8, choices=Format.choices)
    animated = models.BooleanField(default=False)
    width = models.PositiveIntegerField()
    height = models.PositiveIntegerField()
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [models.Index(fields=["widget", "-created_at"], name="widgeticon_widget_created")]

    def __str__(self) -> str:
        return f"custom:{self.file_id}"


class TextTranslation(models.Model):
    """The AI translation of one translatable text (`widget_name`, `widget_signature`,
    `widget_greeting`) into one locale.

    `text` is the last validated translation of the source whose hash is `source_hash`; it stays
    served while a regeneration is `pending` or after it `failed`, and only for that exact source
    (a changed source makes it `stale`). Written through apps.widget.services by the AI app's
    translation job.
    """

    class Status(models.TextChoices):
        READY = "ready"
        PENDING = "pending"
        FAILED = "failed"

    widget = models.ForeignKey(Widget, on_delete=models.CASCADE, related_name="text_translations")
    locale = models.CharField(max_length=8)
    field = models.CharField(max_length=32)
    text = models.TextField(blank=True, default="")
    source_hash = models.CharField(max_length=64, blank=True, default="")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    # The source the pending (or failed) job translates.
    requested_hash = models.CharField(max_length=64, blank=True, default="")
    error = models.CharField(max_length=64, blank=True, default="")
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["widget", "locale", "field"], name="widget_translation_one_per_text"),
        ]

    def __str__(self) -> str:
        return f"{self.field} in {self.locale} (widget {self.widget_id})"


class BusinessHours(models.Model):
    """The widget's business hours (GET/PUT /v1/widget/business-hours), replaced whole by each PUT.

    `hours` holds the validated resource (`apps.widget.hours.validate`); no row means the default
    (disabled: always open). Read through `selectors.business_hours_state`, the one computation.
    """

    widget = models.OneToOneField(Widget, on_delete=models.CASCADE, primary_key=True, related_name="business_hours")
    hours = models.JSONField(default=dict)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name_plural = "business hours"

    def __str__(self) -> str:
        return f"business hours of widget {self.widget_id}"


class IdentitySecret(models.Model):
    """The widget's identity secret: the key of the HMAC-SHA256 a site computes over a person's id
    for `ChatWidget.setUser` (identity verification). Stored encrypted (apps.core.crypto), because
    the service computes the same HMAC; shown once when made (POST /v1/widget/identity-secret).

    A rotation keeps the one before it valid until `previous_valid_until` (24 hours later) so pages
    already rendered with the old hash keep working; any older one ends at once (it is overwritten).
    """

    widget = models.OneToOneField(Widget, on_delete=models.CASCADE, primary_key=True, related_name="identity_secret")
    secret_encrypted = models.TextField()
    created_at = models.DateTimeField(default=timezone.now)
    previous_secret_encrypted = models.TextField(blank=True, default="")
    previous_valid_until = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"identity secret of widget {self.widget_id}"
