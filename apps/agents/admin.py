from django.contrib import admin

from apps.core.admin_site import IssuableWidgetsOnly

from .models import Agent, AgentEvent, Department, Invitation


@admin.register(Agent)
class AgentAdmin(IssuableWidgetsOnly, admin.ModelAdmin):
    """SECURITY: an agent row with a user gives that user the operator console of its widget (every
    chat, private notes included), so the page reaches only the widgets the staff user may issue
    credentials for (`issuable_widgets`), as every admin of the agents app does."""

    list_display = ("id", "name", "widget", "type", "status", "role", "is_owner", "created_at")
    list_filter = ("type", "status", "role")
    search_fields = ("name", "email")
    raw_id_fields = ("widget", "user")


@admin.register(Department)
class DepartmentAdmin(IssuableWidgetsOnly, admin.ModelAdmin):
    list_display = ("id", "name", "widget", "created_at", "updated_at")
    search_fields = ("name",)
    raw_id_fields = ("widget",)
    filter_horizontal = ("agents",)


@admin.register(Invitation)
class InvitationAdmin(IssuableWidgetsOnly, admin.ModelAdmin):
    """Read-only: the token exists only in the e-mail; revoking is the API's or this row's
    `revoked_at`."""

    list_display = ("id", "email", "widget", "created_at", "expires_at", "accepted_at", "revoked_at")
    search_fields = ("email",)
    raw_id_fields = ("widget", "agent")
    readonly_fields = ("token_hash", "created_at", "accepted_at", "agent")


@admin.register(AgentEvent)
class AgentEventAdmin(IssuableWidgetsOnly, admin.ModelAdmin):
    list_display = ("id", "agent", "widget", "type_code", "created_at")
    list_filter = ("type_code",)
    raw_id_fields = ("widget", "agent")
