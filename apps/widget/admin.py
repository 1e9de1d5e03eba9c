from datetime import UTC, datetime

from django.contrib import admin

from apps.audit.admin import AuditedAdmin
from apps.core.admin_site import IssuableWidgetsOnly

from . import services
from .hours import state_at
from .models import BusinessHours, WidgetIcon, WidgetSettings


class _ApiWrittenAdmin(IssuableWidgetsOnly, AuditedAdmin):
    """A widget's row the API writes: admin adds none and never moves one to another widget (the
    widget is the primary key); a deletion goes through the widget's service (`delete_row`), which
    audits it with the staff user and purges the served config, as the API's writes do.

    SECURITY: the settings and hours decide what a widget shows its visitors, so a staff user
    reaches only the widgets an API token could be issued for (`issuable_widgets`)."""

    def has_add_permission(self, request):
        return False

    def get_readonly_fields(self, request, obj=None):
        return ("widget", *super().get_readonly_fields(request, obj))

    def delete_row(self, *, widget) -> None:
        raise NotImplementedError

    def delete_model(self, request, obj):
        self.delete_row(widget=obj.widget)


@admin.register(WidgetSettings)
class WidgetSettingsAdmin(_ApiWrittenAdmin):
    """Stored keys only (absent keys take their render defaults). Edit through the API, which
    validates against the definition and purges the served cache."""

    audit_target = "widget_settings"

    list_display = ("widget", "language_policy_revision", "updated_at")
    readonly_fields = ("values", "language_policy_revision", "created_at", "updated_at")

    def delete_row(self, *, widget) -> None:
        services.delete_stored_settings(widget=widget)


@admin.register(WidgetIcon)
class WidgetIconAdmin(IssuableWidgetsOnly, admin.ModelAdmin):
    """Uploaded launcher icons, limited to the staff user's issuable widgets. Icons are added
    through POST /v1/widget/icons only (`services.add_icon` checks the content and writes the public
    copy the visitor widget loads); an icon keeps its widget and its file. A deletion goes through
    `services.delete_icon` (audited, the served config purged)."""

    list_display = ("id", "widget", "file", "format", "animated", "width", "height", "created_at")
    list_filter = ("format", "animated")
    raw_id_fields = ("widget", "file")
    readonly_fields = ("file", "image", "format", "animated", "width", "height", "created_at")

    def has_add_permission(self, request):
        return False

    def delete_model(self, request, obj):
        services.delete_icon(widget=obj.widget, icon=obj)

    def delete_queryset(self, request, queryset):
        for icon in queryset.select_related("widget"):
            self.delete_model(request, icon)


@admin.register(BusinessHours)
class BusinessHoursAdmin(_ApiWrittenAdmin):
    """The stored week and whether the widget is open now (the one computation). Edit through
    PUT /v1/widget/business-hours, which validates the whole resource and purges the served cache."""

    audit_target = "business_hours"

    list_display = ("widget", "enabled", "timezone", "mode", "open_now", "updated_at")
    readonly_fields = ("hours", "open_now", "updated_at")

    def delete_row(self, *, widget) -> None:
        services.delete_business_hours(widget=widget)

    @admin.display(boolean=True)
    def enabled(self, obj):
        return bool(obj.hours.get("enabled"))

    @admin.display(description="time zone")
    def timezone(self, obj):
        return obj.hours.get("timezone")

    @admin.display(description="outside hours")
    def mode(self, obj):
        return obj.hours.get("outside_hours")

    @admin.display(description="open now", boolean=True)
    def open_now(self, obj):
        return state_at(obj.hours, datetime.now(UTC)).open
