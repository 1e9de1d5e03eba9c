from django.contrib import admin, messages

from . import services
from .models import Call, ExternalOperator, Probe


@admin.register(ExternalOperator)
class ExternalOperatorAdmin(admin.ModelAdmin):
    """External operators. Create them with `manage.py create_external_operator` (the secret is shown
    once there); here: read them, and the lifecycle actions (the kill switch included)."""

    list_display = ("public_id", "name", "widget", "url", "state", "created_at", "deleted_at")
    list_filter = ("state",)
    search_fields = ("public_id", "name", "url", "widget__button_guid")
    readonly_fields = [
        "widget",
        "agent",
        "public_id",
        "url",
        "state",
        "resume_state",
        "endpoint",
        "draining",
        "secret_rotated_at",
        "created_at",
        "updated_at",
        "deleted_at",
    ]
    fields = ["name", *readonly_fields]
    actions = ["pause", "activate", "revoke", "force_drain"]

    def has_add_permission(self, request):
        return False

    def save_model(self, request, obj, form, change):
        services.update_external_operator(widget=obj.widget, operator=obj, changes={"name": obj.name})

    def _move(self, request, queryset, state):
        for op in queryset:
            try:
                services.set_lifecycle(widget=op.widget, operator=op, state=state)
            except Exception as exc:  # noqa: BLE001 - shown to the admin, per operator
                self.message_user(request, f"{op.public_id}: {exc}", level=messages.ERROR)

    @admin.action(description="Pause (hold deliveries)")
    def pause(self, request, queryset):
        self._move(request, queryset, ExternalOperator.State.PAUSED)

    @admin.action(description="Activate")
    def activate(self, request, queryset):
        self._move(request, queryset, ExternalOperator.State.ACTIVE)

    @admin.action(description="Revoke (kill switch, final)")
    def revoke(self, request, queryset):
        self._move(request, queryset, ExternalOperator.State.REVOKED)

    @admin.action(description="Force-drain a rotation")
    def force_drain(self, request, queryset):
        for op in queryset:
            try:
                services.force_drain(widget=op.widget, operator=op)
            except Exception as exc:  # noqa: BLE001 - shown to the admin, per operator
                self.message_user(request, f"{op.public_id}: {exc}", level=messages.ERROR)


@admin.register(Call)
class CallAdmin(admin.ModelAdmin):
    list_display = ("causation_id", "operator", "chat", "type", "created_at", "consumed_at", "outcome")
    list_filter = ("type", "outcome")
    readonly_fields = [f.name for f in Call._meta.fields]


@admin.register(Probe)
class ProbeAdmin(admin.ModelAdmin):
    list_display = ("public_id", "operator", "created_at")
    readonly_fields = [f.name for f in Probe._meta.fields]
