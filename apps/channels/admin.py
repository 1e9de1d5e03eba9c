from django.contrib import admin

from .models import AdCabinet, CustomChannel


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


@admin.register(AdCabinet)
class AdCabinetAdmin(admin.ModelAdmin):
    """What create_ad_cabinet does (new cabinets start disabled); billing staff set
    suspended_by_billing here."""

    list_display = ("id", "widget", "name", "status", "created_at")
    list_filter = ("status",)
    raw_id_fields = ("widget",)
    fields = ("widget", "name", "status")
