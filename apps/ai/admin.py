from django import forms
from django.contrib import admin

from apps.audit.admin import AuditedAdmin
from apps.core.admin_site import IssuableWidgetsOnly, ReadOnlyAdmin, show_errors
from apps.core.errors import ValidationFailed

from . import selectors, services
from .api.serializers import AssistantInput, PhrasesInput, SettingsPatchInput
from .models import AiSettings, Alert, Assistant, Credential, DemandSignal, IntegrationBinding

# The API's error keys and the admin form's field names of a credential.
_FIELD_OF = {"assistant_id": "assistant", "operator_id": "operator", "backup_credential_id": "backup_credential"}
_EDITABLE = ("base_url", "model", "is_active", "assistant", "operator", "backup_credential")


# What the API writes of the settings and of an assistant, with its rules (`XInput`).
_SWITCHES = tuple(SettingsPatchInput().fields)
_ASSISTANT_FIELDS = tuple(AssistantInput().fields)
# The legacy texts only seed an assistant (POST /ai/settings/migrate): an assistant's limits apply.
_LEGACY = {"legacy_persona": "persona", "legacy_system_prompt": "system_prompt", "legacy_greeting": "greeting"}


class AiSettingsForm(forms.ModelForm):
    """The API's rules on every field: the switches by `SettingsPatchInput` (PATCH /v1/ai/settings),
    the phrases by `PhrasesInput` and `services.phrase_overrides` (PUT /v1/ai/messages), the legacy
    texts by the assistant's (`AssistantInput`). A refused value is a form error and changes nothing."""

    class Meta:
        model = AiSettings
        fields = ("widget", *_SWITCHES, *_LEGACY, "phrases")

    def clean(self):
        data = super().clean()
        checked = SettingsPatchInput(data={name: data[name] for name in _SWITCHES if name in data})
        if not checked.is_valid():
            show_errors(self, checked.errors)
        legacy = AssistantInput(data={api: data[name] for name, api in _LEGACY.items() if name in data}, partial=True)
        if not legacy.is_valid():
            show_errors(self, legacy.errors, field_of={api: name for name, api in _LEGACY.items()})
        if "phrases" in data:
            phrases = PhrasesInput(data=data["phrases"])
            if not phrases.is_valid():
                show_errors(self, {"phrases": phrases.errors})
            else:
                body = {key: None if langs is None else dict(langs) for key, langs in phrases.validated_data.items()}
                try:
                    data["phrases"] = services.phrase_overrides(body)
                except ValidationFailed as exc:
                    show_errors(self, {"phrases": exc.errors})
        return data

    def changes(self) -> dict:
        names = (*_SWITCHES, *_LEGACY, "phrases")
        return {name: self.cleaned_data[name] for name in names if name in self.cleaned_data}


@admin.register(AiSettings)
class AiSettingsAdmin(IssuableWidgetsOnly, AuditedAdmin):
    """Saved through `services.update_settings`, as the API's PATCH (its audit row, the widget's
    config event, `enabled_at` when the AI is switched on); deleted through
    `services.delete_settings` (audited, the config event emitted).

    SECURITY: the settings decide whether and how a widget's AI answers its visitors, so a staff
    user reaches only the widgets an API token could be issued for (`issuable_widgets`)."""

    form = AiSettingsForm
    audit_target = "ai_settings"
    list_display = ("widget", "enabled", "rag_enabled", "shadow_mode", "handover_summary", "updated_at")
    raw_id_fields = ("widget",)
    readonly_fields = ("enabled_at", "updated_at")

    def save_model(self, request, obj, form, change):
        row = services.update_settings(widget=obj.widget, changes=form.changes())
        obj.pk = row.pk
        obj.refresh_from_db()

    def delete_model(self, request, obj):
        services.delete_settings(widget=obj.widget)


class AssistantForm(forms.ModelForm):
    """The API's rules (`AssistantInput`: text lengths, temperature 0 to 2, the provider among the
    known ones, at most 50 triggers and 20 quick phrases, the seven languages); a refused value is a
    form error and changes nothing. The values saved are the ones the API would store."""

    class Meta:
        model = Assistant
        fields = ("widget", *_ASSISTANT_FIELDS)

    def clean(self):
        data = super().clean()
        body = {name: data[name] for name in _ASSISTANT_FIELDS if name in data}
        for name in ("provider", "model"):
            if body.get(name) == "":
                body[name] = None  # the API's "clear it"
        checked = AssistantInput(data=body, partial=True)
        if not checked.is_valid():
            show_errors(self, checked.errors)
            return data
        data.update(checked.validated_data)
        return data

    def fields_given(self) -> dict:
        return {name: self.cleaned_data[name] for name in _ASSISTANT_FIELDS if name in self.cleaned_data}


@admin.register(Assistant)
class AssistantAdmin(IssuableWidgetsOnly, admin.ModelAdmin):
    """Saved through `services.create_assistant` and `services.update_assistant`, as the API's (a
    new default clears the others; the widget's config event).

    SECURITY: an assistant's prompt decides what the widget's AI tells its visitors, so a staff
    user reaches only the widgets an API token could be issued for (`issuable_widgets`)."""

    form = AssistantForm
    list_display = ("name", "widget", "enabled", "is_default", "provider", "model", "created_at")
    list_filter = ("enabled", "is_default", "cite_sources")
    raw_id_fields = ("widget",)
    readonly_fields = ("origin", "created_at", "updated_at")

    def save_model(self, request, obj, form, change):
        fields = form.fields_given()
        if change:
            changes = {name: value for name, value in fields.items() if name in form.changed_data}
            services.update_assistant(widget=obj.widget, assistant=obj, changes=changes)
        else:
            obj.pk = services.create_assistant(widget=obj.widget, fields=fields).pk
        obj.refresh_from_db()

    def get_deleted_objects(self, objs, request):
        # An assistant AI operators still run is "protected": the page refuses, as DELETE's 409.
        deleted, counts, perms_needed, protected = super().get_deleted_objects(objs, request)
        for assistant in objs:
            for operator in selectors.running_operators(assistant.widget, assistant):
                protected.append(f"AI operator {operator.name} ({operator.pk}) runs {assistant.name}")
        return deleted, counts, perms_needed, protected

    def delete_model(self, request, obj):
        services.delete_assistant(widget=obj.widget, assistant=obj)

    def delete_queryset(self, request, queryset):
        for assistant in queryset.select_related("widget"):
            self.delete_model(request, assistant)


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
    row), and deleted through `services.delete_credential` (audited); the widget cannot change.

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

    def delete_model(self, request, obj):
        services.delete_credential(widget=obj.widget, credential=obj)


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
