"""Proactive messages in Django admin, read-only: they are written by the API and the console
(audited there), never here.

SECURITY: a row shows what a widget says to its visitors; a staff user reads only the widgets an
API token could be issued for (`IssuableWidgetsOnly`)."""

from django.contrib import admin

from apps.core.admin_site import IssuableWidgetsOnly, ReadOnlyAdmin

from .models import ProactiveCount, ProactiveMessage


@admin.register(ProactiveMessage)
class ProactiveMessageAdmin(IssuableWidgetsOnly, ReadOnlyAdmin, admin.ModelAdmin):
    list_display = ("name", "widget", "enabled", "frequency", "priority", "agent", "updated_at")
    list_filter = ("enabled", "frequency")
    list_select_related = ("widget", "agent")
    search_fields = ("name", "widget__button_guid")
    readonly_fields = [field.name for field in ProactiveMessage._meta.fields]


@admin.register(ProactiveCount)
class ProactiveCountAdmin(IssuableWidgetsOnly, ReadOnlyAdmin, admin.ModelAdmin):
    list_display = ("message", "widget", "day", "shown", "opened", "replied")
    list_select_related = ("widget", "message")
    search_fields = ("message__name", "widget__button_guid")
    readonly_fields = [field.name for field in ProactiveCount._meta.fields]
