from django.contrib import admin

from .models import AdCabinet, CustomChannel, OutboundAttempt, OutboundDelivery


@admin.register(CustomChannel)
class CustomChannelAdmin(admin.ModelAdmin):
    list_display = ("id", "widget", "name", "url", "is_active", "created_at")
    list_filter = ("is_active",)
    search_fields = ("name", "url")
    raw_id_fields = ("widget",)
    # The secret is never shown again; switching is_active is the staff action.
    fields = ("widget", "name", "url", "is_active", "created_at")
    readonly_fields = ("widget", "created_at")

    def has_add_permission(self, request):
        return False  # registration returns the secret once: through the API only


class OutboundAttemptInline(admin.TabularInline):
    model = OutboundAttempt
    extra = 0
    can_delete = False
    readonly_fields = ("number", "started_at", "duration_ms", "status_code", "error")


@admin.register(OutboundDelivery)
class OutboundDeliveryAdmin(admin.ModelAdmin):
    list_display = ("id", "widget", "channel", "status", "attempts", "last_status_code", "created_at")
    list_filter = ("status",)
    readonly_fields = [f.name for f in OutboundDelivery._meta.fields]
    inlines = [OutboundAttemptInline]

    def has_add_permission(self, request):
        return False


@admin.register(AdCabinet)
class AdCabinetAdmin(admin.ModelAdmin):
    """What create_ad_cabinet does (new cabinets start disabled); billing staff set
    suspended_by_billing here."""

    list_display = ("id", "widget", "name", "status", "created_at")
    list_filter = ("status",)
    raw_id_fields = ("widget",)
    fields = ("widget", "name", "status")
