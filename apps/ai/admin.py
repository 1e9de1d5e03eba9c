from django.contrib import admin

from apps.audit.admin import AuditedAdmin

from .models import AiSettings, Alert, Assistant, Credential, DemandSignal, IntegrationBinding


@admin.register(AiSettings)
class AiSettingsAdmin(AuditedAdmin):
    audit_target = "ai_settings"
    list_display = ("widget", "enabled", "rag_enabled", "shadow_mode", "updated_at")
    raw_id_fields = ("widget",)


@admin.register(Assistant)
class AssistantAdmin(admin.ModelAdmin):
    list_display = ("name", "widget", "enabled", "is_default", "provider", "model", "created_at")
    list_filter = ("enabled", "is_default")
    raw_id_fields = ("widget",)


@admin.register(Credential)
class CredentialAdmin(AuditedAdmin):
    """Keys and signing secrets are never shown (stored encrypted; rotate through the API)."""

    audit_target = "ai_credential"
    audit_retired_field = "is_active"

    list_display = ("provider", "widget", "is_active", "assistant", "operator", "model", "created_at")
    list_filter = ("provider", "is_active")
    exclude = ("api_key_encrypted", "signing_secret_encrypted")
    readonly_fields = ("provider",)
    raw_id_fields = ("widget", "assistant", "operator", "backup_credential")

    def has_add_permission(self, request):
        return False


@admin.register(IntegrationBinding)
class IntegrationBindingAdmin(admin.ModelAdmin):
    list_display = ("widget", "provider", "api_token", "created_at")
    exclude = ("secret_encrypted",)
    raw_id_fields = ("widget", "api_token", "assistant", "credential")

    def has_add_permission(self, request):
        return False


@admin.register(Alert)
class AlertAdmin(admin.ModelAdmin):
    list_display = ("kind", "widget", "created_at", "acknowledged_at")
    raw_id_fields = ("widget",)


@admin.register(DemandSignal)
class DemandSignalAdmin(admin.ModelAdmin):
    list_display = ("category", "topic", "count", "widget", "occurred_at")
    raw_id_fields = ("widget",)
