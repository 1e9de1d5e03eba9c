from django import forms
from django.contrib import admin

from apps.core.admin_site import IssuableWidgetsOnly
from apps.core.errors import ValidationFailed
from apps.webhooks import services as webhooks

from .models import AdCabinet, CustomChannel


class CustomChannelForm(forms.ModelForm):
    class Meta:
        model = CustomChannel
        fields = ("name", "url", "is_active")

    def clean_url(self):
        url = self.cleaned_data["url"]
        if url != self.instance.url:
            try:
                webhooks.check_destination(url)
            except ValidationFailed as exc:
                raise forms.ValidationError((exc.errors or {}).get("url", [exc.detail])) from None
        return url


@admin.register(CustomChannel)
class CustomChannelAdmin(IssuableWidgetsOnly, admin.ModelAdmin):
    """SECURITY: a channel's url receives its widget's operator messages, signed with its secret, so
    a staff user reaches only the widgets an API token could be issued for (`issuable_widgets`), and
    a new url passes the webhook destination rule, as the API's registration does."""

    form = CustomChannelForm
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
