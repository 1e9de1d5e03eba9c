"""Django admin (the web cabinet's staff side) of the support surface. The configuration form is
validated by the same function as `configure_support` (config.clean_config): enabling is refused
without a human operator, an allowed token and an IP allowlist. The audit is read-only."""

from __future__ import annotations

import json

from django import forms
from django.contrib import admin

from apps.audit.admin import AuditedAdmin
from apps.core.admin_site import IssuableWidgetsOnly, ReadOnlyAdmin

from .config import KNOWN_KEYS, ConfigInvalid, clean_config, config_payload
from .models import SupportAction, SupportClaim, SupportConfig, Ticket


class SupportConfigForm(forms.ModelForm):
    class Meta:
        model = SupportConfig
        fields = [
            "widget",
            "enabled",
            "operator",
            *[k for k in KNOWN_KEYS if k not in ("enabled", "operator_agent_id")],
            "account_link",
        ]

    def clean(self):
        cleaned = super().clean()
        # On a change the widget is read-only (not a form field): the stored row's widget.
        widget = cleaned.get("widget") if "widget" in self.fields else self.instance.widget
        if widget is None:
            return cleaned
        data = {k: cleaned.get(k) for k in KNOWN_KEYS if k not in ("operator_agent_id",)}
        operator = cleaned.get("operator")
        data["operator_agent_id"] = operator.pk if operator else None
        data = {
            k: v for k, v in data.items() if v is not None or k in ("app_store_id", "play_package", "operator_agent_id")
        }
        try:
            values = clean_config(widget=widget, data=json.loads(json.dumps(data)))
        except ConfigInvalid as exc:
            raise forms.ValidationError(str(exc)) from None
        cleaned.update(values)
        return cleaned


@admin.register(SupportConfig)
class SupportConfigAdmin(IssuableWidgetsOnly, AuditedAdmin):
    """SECURITY: the allowed tokens and the IP allowlist decide who answers a widget's chats as
    support, so a staff user reaches only the widgets an API token could be issued for
    (`issuable_widgets`), and a configuration never moves to another widget."""

    form = SupportConfigForm
    audit_target = "support_config"
    list_display = ("widget", "enabled", "operator", "account_link", "updated_at")
    list_filter = ("enabled", "account_link")
    raw_id_fields = ("widget", "operator")
    readonly_fields = ("stored_configuration",)

    @admin.display(description="Stored configuration (as configure_support prints it)")
    def stored_configuration(self, obj):
        return json.dumps(config_payload(obj), ensure_ascii=False) if obj.pk else ""


@admin.register(SupportAction)
class SupportActionAdmin(IssuableWidgetsOnly, ReadOnlyAdmin, admin.ModelAdmin):
    """The log of what support tokens did in a widget's chats: read-only, never deleted here (it is
    the trail of access to a tenant's data), limited to the staff user's issuable widgets."""

    list_display = (
        "id",
        "widget",
        "token_prefix",
        "service_agent",
        "kind",
        "outcome",
        "status_code",
        "reason",
        "created_at",
    )
    list_filter = ("outcome", "kind", "is_support_reply")
    search_fields = ("token_prefix", "service_agent", "reason")


@admin.register(SupportClaim)
class SupportClaimAdmin(IssuableWidgetsOnly, ReadOnlyAdmin, admin.ModelAdmin):
    """Read-only: a lease lets a support token answer a chat, so it is taken and released by the
    support API's services only."""

    list_display = ("chat", "widget", "service_agent", "claimed_at", "expires_at", "released_at")
    raw_id_fields = ("chat", "widget", "token")

    deletable = True


@admin.register(Ticket)
class TicketAdmin(IssuableWidgetsOnly, admin.ModelAdmin):
    list_display = ("number", "widget", "state", "reason", "priority", "held_for_owner", "created_at")
    list_filter = ("state", "reason")
    raw_id_fields = ("chat", "widget")
