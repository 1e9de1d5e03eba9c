"""Django admin (the web cabinet's staff side) of the support surface. The configuration form is
validated by the same function as `configure_support` (config.clean_config): enabling is refused
without a human operator, an allowed token and an IP allowlist. The audit is read-only."""

from __future__ import annotations

import json

from django import forms
from django.contrib import admin

from apps.audit import services as audit
from apps.audit.admin import AuditedAdmin
from apps.core.admin_site import IssuableWidgetsOnly, ReadOnlyAdmin, show_errors
from apps.core.errors import AppError

from . import services
from .api.tickets import TicketCloseInput, TicketReopenInput
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


class TicketChangeForm(forms.ModelForm):
    """A ticket's state changes through the support API's services only: closing
    (`services.close_ticket`, with a reason, and `duplicate_of` for a duplicate) and reopening
    (`services.reopen_ticket`). The form checks the API's input (`TicketCloseInput`,
    `TicketReopenInput`) and the service's refusals (`check_close`, `check_reopen`) on the stored
    ticket, so a refused change is a form error and changes nothing. The reason and `duplicate_of`
    change with the state only."""

    note = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text="Added to the ticket's agent notes with the change, as the API's `note`.",
    )

    class Meta:
        model = Ticket
        fields = ("state", "reason", "duplicate_of")

    def clean(self):
        data = super().clean()
        if self.errors:
            return data
        stored = Ticket.objects.select_related("widget", "chat").get(pk=self.instance.pk)
        state = data.get("state")
        if state == stored.state:
            for name in ("reason", "duplicate_of"):
                if name in self.changed_data:
                    self.add_error(name, "Changes only as the ticket is closed; reopen it first.")
            if data.get("note"):
                self.add_error("note", "A note goes with closing or reopening the ticket.")
            return data
        body = {"note": data.get("note") or ""}
        if state == Ticket.State.CLOSED:
            body["reason"] = data.get("reason") or ""
            if data.get("duplicate_of") is not None:
                body["duplicate_of"] = data["duplicate_of"]
            serializer = TicketCloseInput(data=body)
        else:
            serializer = TicketReopenInput(data=body)
        if not serializer.is_valid():
            show_errors(self, serializer.errors)
            return data
        self.transition = dict(serializer.validated_data)
        try:
            if state == Ticket.State.CLOSED:
                services.check_close(
                    widget=stored.widget,
                    ticket=stored,
                    reason=self.transition["reason"],
                    duplicate_of=self.transition.get("duplicate_of"),
                )
            else:
                services.check_reopen(widget=stored.widget, ticket=stored)
        except AppError as exc:
            show_errors(self, exc.errors or [exc.detail])
        return data

    def apply(self, *, ticket: Ticket, staff_name: str) -> Ticket:
        """The checked transition through its service; the service checks again under its locks."""
        transition = getattr(self, "transition", None)
        if transition is None:
            return ticket
        agent = staff_name[:48]
        if "reason" in transition:
            return services.close_ticket(
                widget=ticket.widget,
                ticket=ticket,
                reason=transition["reason"],
                service_agent=agent,
                duplicate_of=transition.get("duplicate_of"),
                note=transition.get("note", ""),
            )
        return services.reopen_ticket(
            widget=ticket.widget, ticket=ticket, service_agent=agent, note=transition.get("note", "")
        )


@admin.register(Ticket)
class TicketAdmin(IssuableWidgetsOnly, AuditedAdmin):
    """Tickets are filed by the signed intake (`services.file_ticket`) only, so admin adds none. A
    change of state goes through the support API's close and reopen services (TicketChangeForm);
    every other field is read here. Changes and deletions are audited with the staff user."""

    form = TicketChangeForm
    audit_target = "support_ticket"
    list_display = ("number", "widget", "state", "reason", "priority", "held_for_owner", "created_at")
    list_filter = ("state", "reason")
    raw_id_fields = ("chat", "widget")
    readonly_fields = (
        "widget",
        "number",
        "chat",
        "app_user_id",
        "priority",
        "held_for_owner",
        "source",
        "category",
        "subject",
        "opening_message",
        "previous_numbers",
        "agent_notes",
        "context",
        "created_at",
        "updated_at",
        "closed_at",
    )

    def get_queryset(self, request):
        # The ticket of a chat whose contact is under erasure reads as missing, as on the API.
        return super().get_queryset(request).live()

    def has_add_permission(self, request):
        return False

    def save_model(self, request, obj, form, change):
        before = audit.values(Ticket.objects.get(pk=obj.pk))
        ticket = form.apply(
            ticket=Ticket.objects.select_related("widget", "chat").get(pk=obj.pk),
            staff_name=request.user.get_username(),
        )
        obj.refresh_from_db()
        self._audit(ticket, "changed", before, audit.values(ticket), always=False)
