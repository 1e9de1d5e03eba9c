"""Routing rows in Django admin, read-only: the settings, policies and clocks are written by the API,
the console and routing's own services (audited there), never here.

SECURITY: a row tells how a widget's chats are served; a staff user reads only the widgets an API
token could be issued for (`IssuableWidgetsOnly`)."""

from django.contrib import admin

from apps.core.admin_site import IssuableWidgetsOnly, ReadOnlyAdmin

from .models import ChatRouting, RoutingSettings, SlaClock, SlaPolicy


def _fields(model) -> list[str]:
    return [field.name for field in model._meta.fields]


@admin.register(RoutingSettings)
class RoutingSettingsAdmin(IssuableWidgetsOnly, ReadOnlyAdmin, admin.ModelAdmin):
    list_display = ("widget", "mode", "default_capacity", "reroute_after_seconds", "show_queue_position", "updated_at")
    list_filter = ("mode",)
    list_select_related = ("widget",)
    search_fields = ("widget__button_guid",)
    readonly_fields = _fields(RoutingSettings)


@admin.register(ChatRouting)
class ChatRoutingAdmin(IssuableWidgetsOnly, ReadOnlyAdmin, admin.ModelAdmin):
    list_display = ("chat", "widget", "queued_at", "queue_since", "assigned_at", "assigned_by", "reroutes")
    list_filter = ("assigned_by",)
    list_select_related = ("widget",)
    search_fields = ("chat__id", "widget__button_guid")
    readonly_fields = _fields(ChatRouting)


@admin.register(SlaPolicy)
class SlaPolicyAdmin(IssuableWidgetsOnly, ReadOnlyAdmin, admin.ModelAdmin):
    list_display = (
        "name",
        "widget",
        "department",
        "first_response_seconds",
        "next_response_seconds",
        "resolution_seconds",
        "business_hours_only",
    )
    list_filter = ("business_hours_only",)
    list_select_related = ("widget", "department")
    search_fields = ("name", "widget__button_guid")
    readonly_fields = _fields(SlaPolicy)


@admin.register(SlaClock)
class SlaClockAdmin(IssuableWidgetsOnly, ReadOnlyAdmin, admin.ModelAdmin):
    list_display = ("chat", "kind", "widget", "started_at", "due_at", "stopped_at", "met", "breached_at", "agent_id")
    list_filter = ("kind", "met")
    list_select_related = ("widget",)
    search_fields = ("chat__id", "widget__button_guid")
    readonly_fields = _fields(SlaClock)
