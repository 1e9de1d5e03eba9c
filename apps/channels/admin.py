from django import forms
from django.contrib import admin
from django.utils import timezone

from apps.core.admin_site import IssuableWidgetsOnly
from apps.core.errors import AppError, ValidationFailed
from apps.webhooks import services as webhooks

from . import cabinets, services
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

    # Through the services: audited with the staff user as actor.
    def save_model(self, request, obj, form, change):
        changes = {name: form.cleaned_data[name] for name in form.changed_data}
        services.update_custom_channel(widget=obj.widget, channel=obj, changes=changes)
        obj.refresh_from_db()

    def delete_model(self, request, obj):
        services.delete_custom_channel(widget=obj.widget, channel=obj)

    def delete_queryset(self, request, queryset):
        for channel in queryset.select_related("widget"):
            self.delete_model(request, channel)


class AdCabinetForm(forms.ModelForm):
    """A change of status passes the API's rules before anything is saved: enabling needs a paid
    plan and a free ad-cabinet slot of the account."""

    class Meta:
        model = AdCabinet
        fields = ("widget", "name", "status")

    def clean(self):
        cleaned = super().clean()
        stored = self.instance.pk and AdCabinet.objects.filter(pk=self.instance.pk).values_list("status", flat=True)
        was = stored[0] if stored else None
        if was is not None and cleaned.get("status") == AdCabinet.Status.ENABLED != was:
            try:
                cabinets.check_cabinet_can_be_enabled(widget=self.instance.widget)
            except AppError as exc:
                self.add_error("status", exc.detail)
        return cleaned


@admin.register(AdCabinet)
class AdCabinetAdmin(IssuableWidgetsOnly, admin.ModelAdmin):
    """What create_ad_cabinet does (new cabinets start disabled); a status goes through
    `cabinets.set_cabinet_status` (the API's plan gate and slots) and billing staff's
    `suspended_by_billing` through `cabinets.set_cabinet_suspension`; a deletion through
    `cabinets.delete_cabinet`, as DELETE's.

    SECURITY: a cabinet routes its widget's `av__<id>` chats, so a staff user reaches only the
    widgets an API token could be issued for (`issuable_widgets`); the widget never changes."""

    form = AdCabinetForm
    list_display = ("id", "widget", "name", "status", "created_at")
    list_filter = ("status",)
    raw_id_fields = ("widget",)

    def get_fields(self, request, obj=None):
        return ("widget", "name", "status") if obj is not None else ("widget", "name")

    def save_model(self, request, obj, form, change):
        if not change:
            created = cabinets.create_ad_cabinet(widget=obj.widget, name=obj.name)
            obj.pk, obj.status, obj.created_at, obj.updated_at = (
                created.pk,
                created.status,
                created.created_at,
                created.updated_at,
            )
            return
        wanted = obj.status
        was = AdCabinet.objects.values_list("status", flat=True).get(pk=obj.pk)
        if "name" in form.changed_data:
            AdCabinet.objects.filter(pk=obj.pk).update(name=obj.name, updated_at=timezone.now())
        suspended = AdCabinet.Status.SUSPENDED_BY_BILLING
        if wanted != was:
            if suspended in (wanted, was):
                cabinets.set_cabinet_suspension(widget=obj.widget, cabinet=obj, suspended=wanted == suspended)
            if wanted != suspended:
                cabinets.set_cabinet_status(widget=obj.widget, cabinet=obj, status=wanted)
        obj.refresh_from_db()

    def delete_model(self, request, obj):
        cabinets.delete_cabinet(widget=obj.widget, cabinet=obj)

    def delete_queryset(self, request, queryset):
        for cabinet in queryset.select_related("widget"):
            self.delete_model(request, cabinet)
