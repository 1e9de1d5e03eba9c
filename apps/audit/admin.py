"""The audit log in Django admin: read-only (rows are written by `services.record` only)."""

from django.contrib import admin

from .models import AuditEntry


@admin.register(AuditEntry)
class AuditEntryAdmin(admin.ModelAdmin):
    list_display = ("at", "widget", "action", "actor_type", "actor_name", "target_type", "target_id")
    list_filter = ("action", "actor_type")
    search_fields = ("action", "actor_name", "target_id")
    date_hierarchy = "at"
    readonly_fields = [f.name for f in AuditEntry._meta.fields]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
