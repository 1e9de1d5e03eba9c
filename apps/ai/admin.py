from django import forms
from django.contrib import admin

from apps.audit.admin import AuditedAdmin
from apps.core.admin_site import IssuableWidgetsOnly, ReadOnlyAdmin
from apps.core.errors import ValidationFailed

from . import services
from .models import AiSettings, Alert, Assistant, Credential, DemandSignal, IntegrationBinding

# The API's error keys and the admin form's field names of a credential.
_FIELD_OF = {"assistant_id": "assistant", "operator_id": "operator", "backup_credential_id": "backup_credential"}
_EDITABLE = ("base_url", "model", "is_active", "assistant", "operator", "backup_credential")


@admin.register(AiSettings)
class AiSettingsAdmin(IssuableWidgetsOnly, AuditedAdmin):
    audit_target = "ai_settings"
    list_display = ("widget", "enabled", "rag_enabled", "shadow_mode", "handover_summary", "updated_at")
    raw_id_fields = ("widget",)


@admin.register(Assistant)
class AssistantAdmin(IssuableWidgetsOnly, admin.ModelAdmin):
    """SECURITY: an assistant's prompt decides what the widget's AI tells its visitors, so a staff
    user reaches only the widgets an API token could be issued for (`issuable_widgets`)."""

    list_display = ("name", "widget", "enabled", "is_default", "provider", "model", "created_at")
    list_filter = ("enabled", "is_default", "cite_sources")
    raw_id_fields = ("widget",)


class CredentialChangeForm(forms.ModelForm):
    """Runs the API's save-time checks (`services.apply_credential_changes`: the address guard on
    `base_url`, assistant, operator and backup inside the credential's widget, no backup cycle) on a
    fresh copy, so a refused change is a form error and changes nothing."""

    # Write-only, as in the API: never drawn, stored only when given (a rotation, or with a new base_url).
    api_key = forms.CharField(
        required=False,
        strip=True,
        widget=forms.PasswordInput(render_value=False),
        help_text="Write-only. Give it to rotate the key; a new base_url needs it too.",
    )

    class Meta:
        model = Credential
        fields = _EDITABLE

    def changes(self) -> dict:
        changes = {name: self.cleaned_data.get(name) for name in self.changed_data if name in _EDITABLE}
        if self.cleaned_data.get("api_key"):
            changes["api_key"] = self.cleaned_data["api_key"]
        return changes

    def clean(self):
        data = super().clean()
        if self.instance.pk is None or self.errors:
            return data
        copy = Credential.objects.select_related("widget").get(pk=self.instance.pk)
        try:
            services.apply_credential_changes(widget=copy.widget, credential=copy, changes=self.changes())
        except ValidationFailed as exc:
            for key, messages in (getattr(exc, "errors", None) or {"__all__": [str(exc)]}).items():
                field = _FIELD_OF.get(key, key)
                self.add_error(field if field in self.fields else None, messages)
            return data
        wide = copy.is_active and copy.is_widget_wide
        others = Credential.objects.filter(
            widget=copy.widget, provider=copy.provider, is_active=True, assistant=None, operator=None
        )
        if wide and others.exclude(pk=copy.pk).exists():
            self.add_error("is_active", f"An active widget-wide {copy.provider} credential already exists.")
        return data


@admin.register(Credential)
class CredentialAdmin(IssuableWidgetsOnly, AuditedAdmin):
    """Keys and signing secrets are never shown (stored encrypted; rotate through the API). Changes
    are saved through `services.update_credential`, as the API's PATCH (which writes their audit
    row); the widget cannot change. Deletions are audited by AuditedAdmin.

    SECURITY: a credential's `base_url` is where its key is sent, so a staff user reaches only the
    credentials of the widgets an API token could be issued for (`issuable_widgets`)."""

    form = CredentialChangeForm
    audit_target = "ai_credential"
    audit_retired_field = "is_active"
    list_display = ("provider", "widget", "is_active", "assistant", "operator", "model", "created_at")
    list_filter = ("provider", "is_active")
    fields = ("widget", "provider", "api_key", *_EDITABLE)
    readonly_fields = ("widget", "provider")
    raw_id_fields = ("assistant", "operator", "backup_credential")

    def has_add_permission(self, request):
        return False

    def save_model(self, request, obj, form, change):
        # The form checked a copy; the service checks again under its lock and saves.
        services.update_credential(widget=obj.widget, credential=obj, changes=form.changes())
        obj.refresh_from_db()


@admin.register(IntegrationBinding)
class IntegrationBindingAdmin(IssuableWidgetsOnly, ReadOnlyAdmin, admin.ModelAdmin):
    """Read-only: a binding is written by the API (`services.bind_integration` checks the token's
    scopes and the credential; DELETE then POST rotates). Deleting one here unbinds, as DELETE does.

    SECURITY: the bound token is the only signer of the widget's signed endpoints and the credential
    pays for the turns, so a staff user reaches only the widgets an API token could be issued for
    (`issuable_widgets`)."""

    list_display = ("widget", "provider", "api_token", "created_at")
    fields = ("widget", "provider", "api_token", "assistant", "credential", "created_at")
    readonly_fields = fields

    deletable = True


@admin.register(Alert)
class AlertAdmin(IssuableWidgetsOnly, admin.ModelAdmin):
    list_display = ("kind", "widget", "created_at", "acknowledged_at")
    raw_id_fields = ("widget",)


@admin.register(DemandSignal)
class DemandSignalAdmin(IssuableWidgetsOnly, admin.ModelAdmin):
    list_display = ("category", "topic", "count", "widget", "occurred_at")
    raw_id_fields = ("widget",)
