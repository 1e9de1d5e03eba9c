from django import forms
from django.contrib import admin, messages
from django.db import transaction
from django.http import HttpResponseRedirect
from django.urls import reverse

from apps.core.admin_site import IssuableWidgetsOnly
from apps.core.errors import AppError

from . import services
from .models import Agent, AgentEvent, Department, Invitation


class AgentChangeForm(forms.ModelForm):
    """An agent's status and `show_in_header` change through the agents services, as on the API and
    the console: banned through `suspend_agent`, banned -> active through `restore_agent` (the seat
    limit; a revoked external operator stays banned), active <-> relaxation through
    `set_agent_status`, `show_in_header` through `set_show_in_header`, each with its agent event and
    the widget config purge. The changes are made while the form is checked, in one savepoint: a
    refusal is a form error and changes nothing."""

    class Meta:
        model = Agent
        fields = ("status", "show_in_header")

    def clean(self):
        data = super().clean()
        if self.errors or not self.changed_data:
            return data
        self._field = None
        try:
            with transaction.atomic():
                self._apply(data)
        except AppError as exc:
            self.add_error(self._field, exc.detail)
        return data

    def _apply(self, data) -> None:
        stored = Agent.objects.select_related("widget").get(pk=self.instance.pk)
        widget = stored.widget
        status = data.get("status")
        if "status" in self.changed_data and status != stored.status:
            self._field = "status"
            if status == Agent.Status.BANNED:
                services.suspend_agent(widget=widget, agent=stored)
            elif stored.status == Agent.Status.BANNED and status == Agent.Status.ACTIVE:
                services.restore_agent(widget=widget, agent=stored)
            else:
                services.set_agent_status(widget=widget, agent=stored, status=status)
        if "show_in_header" in self.changed_data:
            self._field = "show_in_header"
            services.set_show_in_header(widget=widget, agent=stored, show_in_header=data["show_in_header"])


@admin.register(Agent)
class AgentAdmin(IssuableWidgetsOnly, admin.ModelAdmin):
    """SECURITY: an agent row with a user gives that user the operator console of its widget (every
    chat, private notes included), so the page reaches only the widgets the staff user may issue
    credentials for (`issuable_widgets`), as every admin of the agents app does.

    Agents are added here as on the API: never (a human operator accepts an invitation or is made
    by the `create_agent` command; an AI operator belongs to the AI operator endpoints). Status and
    `show_in_header` change through the agents services (AgentChangeForm); the rest has no service
    and is read here. Deleting is the API's DELETE (`services.delete_agent`: a soft delete to banned,
    refused for the AI operator and the owner's row)."""

    form = AgentChangeForm
    list_display = ("id", "name", "widget", "type", "status", "role", "is_owner", "created_at")
    list_filter = ("type", "status", "role")
    search_fields = ("name", "email")
    readonly_fields = (
        "widget",
        "user",
        "name",
        "surname",
        "email",
        "avatar",
        "role",
        "type",
        "ai_assistant_id",
        "is_owner",
        "created_at",
    )

    def has_add_permission(self, request):
        return False

    def get_actions(self, request):
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)  # one agent at a time, through delete_agent
        return actions

    def save_model(self, request, obj, form, change):
        obj.refresh_from_db()  # AgentChangeForm made the changes through the services

    def get_deleted_objects(self, objs, request):
        # A soft delete: the row becomes banned and nothing is taken along.
        return [str(obj) for obj in objs], {}, set(), []

    def delete_view(self, request, object_id, extra_context=None):
        try:
            return super().delete_view(request, object_id, extra_context)
        except services.AgentNotDeletable as exc:
            self.message_user(request, exc.detail, messages.ERROR)
            return HttpResponseRedirect(reverse("admin:agents_agent_change", args=[object_id]))

    def delete_model(self, request, obj):
        services.delete_agent(widget=obj.widget, agent=obj)


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
