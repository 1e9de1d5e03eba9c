from django.contrib import admin

from apps.audit.admin import AuditedAdmin
from apps.core.services import issuable_widgets

from .models import Delivery, EventSwitch, Subscription


@admin.register(EventSwitch)
class EventSwitchAdmin(admin.ModelAdmin):
    """Switch `Wired` event types on platform-wide (or a `Live` one off)."""

    list_display = ("event_type", "enabled", "updated_at")
    list_editable = ("enabled",)


@admin.register(Subscription)
class SubscriptionAdmin(AuditedAdmin):
    audit_target = "webhook_subscription"
    list_display = ("id", "widget", "url", "is_active", "is_legacy_compat", "created_at")
    list_filter = ("is_active", "is_legacy_compat")
    search_fields = ("url", "widget__button_guid")
    exclude = ("secret_encrypted",)
    raw_id_fields = ("widget",)

    # SECURITY: a subscription's url receives its widget's events, so a staff user reaches only the
    # widgets an API token could be issued for.
    def get_queryset(self, request):
        return super().get_queryset(request).filter(widget__in=issuable_widgets(request.user))

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        if db_field.name == "widget":
            kwargs["queryset"] = issuable_widgets(request.user)
        return super().formfield_for_foreignkey(db_field, request, **kwargs)


@admin.register(Delivery)
class DeliveryAdmin(admin.ModelAdmin):
    list_display = ("delivery_id", "subscription", "event_type", "status", "attempts", "last_error", "created_at")
    list_filter = ("status", "event_type", "envelope")
    exclude = ("body",)
    readonly_fields = [f.name for f in Delivery._meta.fields if f.name != "body"]
