from django.contrib import admin

from apps.audit.admin import AuditedAdmin

from .models import WidgetIcon, WidgetSettings


@admin.register(WidgetSettings)
class WidgetSettingsAdmin(AuditedAdmin):
    """Stored keys only (absent keys take their render defaults). Edit through the API, which
    validates against the definition and purges the served cache."""

    audit_target = "widget_settings"

    list_display = ("widget", "language_policy_revision", "updated_at")
    raw_id_fields = ("widget",)
    readonly_fields = ("values", "language_policy_revision", "created_at", "updated_at")


@admin.register(WidgetIcon)
class WidgetIconAdmin(admin.ModelAdmin):
    list_display = ("id", "widget", "file", "format", "animated", "width", "height", "created_at")
    list_filter = ("format", "animated")
    raw_id_fields = ("widget", "file")
    readonly_fields = ("image", "format", "animated", "width", "height", "created_at")
