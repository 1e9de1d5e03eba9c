from django import forms
from django.contrib import admin

from apps.audit.admin import AuditedAdmin
from apps.core.admin_site import CountsWhatGoesAlong, IssuableWidgetsOnly, ReadOnlyAdmin
from apps.core.errors import ValidationFailed

from .models import Delivery, EventSwitch, Subscription
from .subscriptions import check_destination, delete_subscription


class SubscriptionForm(forms.ModelForm):
    """A new url passes the destination rule of the API's create and PATCH."""

    class Meta:
        model = Subscription
        fields = ("widget", "url", "events", "is_active", "is_legacy_compat", "created_at", "updated_at")

    def clean_url(self):
        url = self.cleaned_data["url"]
        if url != self.instance.url:
            try:
                check_destination(url)
            except ValidationFailed as exc:
                raise forms.ValidationError((exc.errors or {}).get("url", [exc.detail])) from None
        return url


@admin.register(EventSwitch)
class EventSwitchAdmin(admin.ModelAdmin):
    """Switch `Wired` event types on platform-wide (or a `Live` one off)."""

    list_display = ("event_type", "enabled", "updated_at")
    list_editable = ("enabled",)


@admin.register(Subscription)
class SubscriptionAdmin(IssuableWidgetsOnly, CountsWhatGoesAlong, AuditedAdmin):
    form = SubscriptionForm
    audit_target = "webhook_subscription"
    list_display = ("id", "widget", "url", "is_active", "is_legacy_compat", "created_at")
    list_filter = ("is_active", "is_legacy_compat")
    search_fields = ("url", "widget__button_guid")
    exclude = ("secret_encrypted",)
    raw_id_fields = ("widget",)

    def delete_model(self, request, obj):
        """The API's deletion: the delivery log in batches, and the audit row."""
        delete_subscription(widget=obj.widget, subscription=obj)


@admin.register(Delivery)
class DeliveryAdmin(IssuableWidgetsOnly, ReadOnlyAdmin, admin.ModelAdmin):
    """The delivery log, read-only (the engine writes it). SECURITY: a row names its subscription's
    url, so a staff user reads only the log of the widgets the subscription page reaches."""

    list_display = ("delivery_id", "subscription", "event_type", "status", "attempts", "last_error", "created_at")
    list_filter = ("status", "event_type", "envelope")
    exclude = ("body",)
    readonly_fields = [f.name for f in Delivery._meta.fields if f.name != "body"]

    deletable = True
