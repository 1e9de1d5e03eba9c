from types import SimpleNamespace

from django import forms
from django.contrib import admin, messages
from django.db import transaction
from django.http import HttpResponseRedirect
from django.urls import reverse

from apps.core.admin_site import IssuableWidgetsOnly, ReadOnlyAdmin, show_errors
from apps.core.errors import AppError
from apps.core.services import issuable_widgets

from . import services
from .api.serializers import DepartmentInput
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


class DepartmentForm(forms.ModelForm):
    """The API's rules (`DepartmentInput`: the name, the channel vocabulary with this widget's ad
    cabinets, agents of this widget only, the week's schedule); a refused value is a form error and
    changes nothing. The values saved are the ones the API would store."""

    class Meta:
        model = Department
        fields = ("widget", "name", "channels", "agents", "schedule")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # `[]` (no channels) and `{}` (no schedule) are values the API stores, not missing ones.
        for name in ("channels", "schedule"):
            if name in self.fields:
                self.fields[name].required = False

    def clean(self):
        data = super().clean()
        # On a change the widget is read-only (not a form field): the stored row's widget.
        widget = data.get("widget") if "widget" in self.fields else self.instance.widget
        if widget is None or self.errors:
            return data
        body = {"name": data.get("name"), "channels": data.get("channels"), "schedule": data.get("schedule")}
        body = {name: value for name, value in body.items() if value is not None}
        body["agent_ids"] = [agent.pk for agent in data.get("agents") or []]
        checked = DepartmentInput(data=body, context={"request": SimpleNamespace(widget=widget)})
        if not checked.is_valid():
            show_errors(self, checked.errors, field_of={"agent_ids": "agents"})
            return data
        self.checked = dict(checked.validated_data)
        return data


@admin.register(Department)
class DepartmentAdmin(IssuableWidgetsOnly, admin.ModelAdmin):
    """Saved through the agents services as the API's writes (`create_department`,
    `update_department`, `set_department_agents`, `set_department_schedule`), deleted through
    `delete_department`. The agent choices are the agents of the staff user's issuable widgets."""

    form = DepartmentForm
    list_display = ("id", "name", "widget", "created_at", "updated_at")
    search_fields = ("name",)
    raw_id_fields = ("widget",)
    filter_horizontal = ("agents",)
    readonly_fields = ("avatar", "created_at", "updated_at")

    def formfield_for_manytomany(self, db_field, request, **kwargs):
        if db_field.name == "agents":
            kwargs["queryset"] = Agent.objects.filter(widget__in=issuable_widgets(request.user))
        return super().formfield_for_manytomany(db_field, request, **kwargs)

    def save_model(self, request, obj, form, change):
        checked = form.checked
        if not change:
            obj.pk = services.create_department(
                widget=obj.widget,
                name=checked["name"],
                channels=checked.get("channels"),
                agents=checked["agent_ids"],
                schedule=checked.get("schedule"),
            ).pk
        else:
            stored = Department.objects.get(pk=obj.pk)
            services.update_department(
                widget=stored.widget, department=stored, name=checked["name"], channels=checked.get("channels")
            )
            if "agents" in form.changed_data:
                services.set_department_agents(widget=stored.widget, department=stored, agents=checked["agent_ids"])
            if "schedule" in form.changed_data and "schedule" in checked:
                services.set_department_schedule(widget=stored.widget, department=stored, schedule=checked["schedule"])
        obj.refresh_from_db()

    def save_related(self, request, form, formsets, change):
        for formset in formsets:
            self.save_formset(request, form, formset, change=change)  # the agents were set by the service

    def delete_model(self, request, obj):
        services.delete_department(widget=obj.widget, department=obj)

    def delete_queryset(self, request, queryset):
        for department in list(queryset):
            self.delete_model(request, department)


@admin.register(Invitation)
class InvitationAdmin(IssuableWidgetsOnly, admin.ModelAdmin):
    """Read here; invitations are sent by the API (`services.invite_agent`: the seat check, the
    mail with the token) and revoked by the action, as the API's revoke (`services.revoke_invitation`).

    SECURITY: accepting an invitation attaches the invitee to the Django user with the invitation's
    address and, when that user has no usable password, sets the password the invitee types; so the
    address, the expiry and the state of a sent invitation never change here."""

    list_display = ("id", "email", "widget", "created_at", "expires_at", "accepted_at", "revoked_at")
    search_fields = ("email",)
    readonly_fields = (
        "widget",
        "email",
        "token_hash",
        "created_at",
        "expires_at",
        "accepted_at",
        "revoked_at",
        "agent",
    )
    actions = ("revoke",)

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        # Revoking ends an invitation and keeps its row, the trail of who was invited and when.
        return False

    @admin.action(description="Revoke selected invitations", permissions=["change"])
    def revoke(self, request, queryset):
        for invitation in queryset.select_related("widget"):
            services.revoke_invitation(widget=invitation.widget, invitation=invitation)


@admin.register(AgentEvent)
class AgentEventAdmin(IssuableWidgetsOnly, ReadOnlyAdmin, admin.ModelAdmin):
    """An agent's event log, written by the agents services only: read here, never changed or
    deleted."""

    list_display = ("id", "agent", "widget", "type_code", "created_at")
    list_filter = ("type_code",)
    raw_id_fields = ("widget", "agent")
