"""Django admin of data protection: contacts with an erase action, the retention setting, the
erasures in progress, the audit log. Every write goes through apps.privacy.services (the API's rules
and audit)."""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages

from apps.audit.models import AuditEntry
from apps.chats.models import Contact
from apps.core.admin_site import IssuableWidgetsOnly, ReadOnlyAdmin
from apps.core.errors import NotFound
from apps.erasure.models import PendingErasure

from . import services
from .models import RETENTION_MAX_DAYS, RETENTION_MIN_DAYS, RetentionPolicy


@admin.register(Contact)
class ContactAdmin(IssuableWidgetsOnly, admin.ModelAdmin):
    """Contacts are read here; changes go through the API. The one write is erasure.

    SECURITY: a contact is a tenant's personal data and erasing one cannot be undone, so a staff user
    reaches only the widgets an API token could be issued for (`issuable_widgets`)."""

    list_display = ("guid", "widget", "name", "email", "phone", "created_at")
    search_fields = ("guid", "name", "email", "phone", "external_id")
    raw_id_fields = ("widget",)
    readonly_fields = (
        "widget",
        "guid",
        "name",
        "email",
        "phone",
        "attributes",
        "locale",
        "external_id",
        "verified_at",
        "created_at",
        "updated_at",
    )
    actions = ["erase"]

    def get_queryset(self, request):
        return super().get_queryset(request).live()

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False  # a contact goes by erasure only (its chats, files and webhook log with it)

    # An erasure cannot be undone: it takes the permission to change contacts, never view alone.
    @admin.action(description="Erase selected contacts (chats, messages, files; queued)", permissions=["change"])
    def erase(self, request, queryset):
        queued = 0
        for contact in queryset.select_related("widget"):
            try:
                services.request_contact_erasure(
                    widget=contact.widget, contact=contact, source=PendingErasure.Source.ADMIN
                )
            except NotFound:
                continue  # already being erased
            queued += 1
        self.message_user(request, f"Erasure queued for {queued} contact(s).", messages.SUCCESS)


class RetentionPolicyForm(forms.ModelForm):
    """The API's bounds (RetentionInput): null, or RETENTION_MIN_DAYS to RETENTION_MAX_DAYS days."""

    chats_days = forms.IntegerField(
        min_value=RETENTION_MIN_DAYS,
        max_value=RETENTION_MAX_DAYS,
        required=False,
        help_text=f"Days a chat is kept after its last message, {RETENTION_MIN_DAYS} to {RETENTION_MAX_DAYS}; "
        "empty keeps chats for good.",
    )

    class Meta:
        model = RetentionPolicy
        fields = ("widget", "chats_days")


@admin.register(RetentionPolicy)
class RetentionPolicyAdmin(IssuableWidgetsOnly, admin.ModelAdmin):
    form = RetentionPolicyForm
    list_display = ("widget", "chats_days", "updated_at")
    raw_id_fields = ("widget",)
    readonly_fields = ("updated_at",)

    def save_model(self, request, obj, form, change):
        saved = services.set_retention(widget=obj.widget, chats_days=obj.chats_days)
        obj.pk, obj.updated_at = saved.pk, saved.updated_at

    def delete_model(self, request, obj):
        services.set_retention(widget=obj.widget, chats_days=None)

    def delete_queryset(self, request, queryset):
        for obj in queryset.select_related("widget"):
            self.delete_model(request, obj)


@admin.register(PendingErasure)
class PendingErasureAdmin(IssuableWidgetsOnly, ReadOnlyAdmin, admin.ModelAdmin):
    """Erasures accepted and not finished yet (read-only: the worker removes each row when done)."""

    list_display = ("contact_id", "widget", "source", "requested_at", "runs")
    readonly_fields = ("widget", "contact_id", "source", "requested_at", "runs")


@admin.register(AuditEntry)
class AuditEntryAdmin(IssuableWidgetsOnly, ReadOnlyAdmin, admin.ModelAdmin):
    """Read-only: rows are written by `apps.audit.services.record` only.

    SECURITY: a row repeats what the audited pages hold (webhook urls, a credential's base_url, the
    support IP allowlist, e-mails), so a staff user reads only the rows of the widgets those pages
    reach (`issuable_widgets`)."""

    list_display = ("at", "widget", "action", "actor_type", "actor_name", "target_type", "target_id")
    list_filter = ("action", "actor_type")
    search_fields = ("action", "actor_name", "target_id")
    date_hierarchy = "at"
    readonly_fields = [f.name for f in AuditEntry._meta.fields]
