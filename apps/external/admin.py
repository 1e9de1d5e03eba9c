from django import forms
from django.contrib import admin, messages

from apps.core.admin_site import IssuableWidgetsOnly
from apps.core.errors import ValidationFailed
from apps.webhooks import services as webhooks

from . import services
from .models import Call, ExternalOperator, Probe


def _checked_name(name: str) -> str:
    try:
        return services.clean_name(name)
    except ValidationFailed as exc:
        raise forms.ValidationError(" ".join((exc.errors or {}).get("name", [exc.detail]))) from None


class ExternalOperatorChangeForm(forms.ModelForm):
    """Renaming goes through the service; its name rule is checked here, so a refused name is a form
    error."""

    class Meta:
        model = ExternalOperator
        fields = ["name"]

    def clean_name(self):
        return _checked_name(self.cleaned_data["name"])


class ExternalOperatorAddForm(forms.ModelForm):
    """Creating goes through the service (a webhook agent, the endpoint, a generated secret)."""

    state = forms.ChoiceField(choices=[("active", "active"), ("testing", "testing"), ("paused", "paused")])

    class Meta:
        model = ExternalOperator
        fields = ["widget", "name", "url"]

    def clean_name(self):
        return _checked_name(self.cleaned_data["name"])

    def clean_url(self):
        url = self.cleaned_data["url"]
        try:
            webhooks.check_destination(url)
        except ValidationFailed as exc:
            raise forms.ValidationError(" ".join((exc.errors or {}).get("url", [exc.detail]))) from None
        return url


@admin.register(ExternalOperator)
class ExternalOperatorAdmin(IssuableWidgetsOnly, admin.ModelAdmin):
    """External operators: create (the signing secret is shown once, in the confirmation message),
    rename, and the lifecycle actions (the kill switch included). `manage.py create_external_operator`
    does the same from the command line.

    SECURITY: a signing secret answers a widget's chats, so the page reaches the widgets an API token
    could be issued for (`issuable_widgets`), for creating, listing and the lifecycle actions."""

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

    def get_form(self, request, obj=None, change=False, **kwargs):
        if obj is None:
            kwargs["form"] = ExternalOperatorAddForm
            kwargs["fields"] = ["widget", "name", "url", "state"]
        else:
            kwargs["form"] = ExternalOperatorChangeForm
        return super().get_form(request, obj, change=change, **kwargs)

    def get_readonly_fields(self, request, obj=None):
        return self.readonly_fields if obj is not None else []

    def get_fields(self, request, obj=None):
        return self.fields if obj is not None else ["widget", "name", "url", "state"]

    def save_model(self, request, obj, form, change):
        if change:
            services.update_external_operator(widget=obj.widget, operator=obj, changes={"name": obj.name})
            return
        created, secret = services.create_external_operator(
            widget=obj.widget, name=obj.name, url=obj.url, state=form.cleaned_data["state"]
        )
        obj.pk = created.pk  # the admin answers with the row the service made
        obj.refresh_from_db()
        self.message_user(request, f"Signing secret of {created.public_id} (shown once): {secret}", messages.WARNING)

    def _move(self, request, queryset, state):
        for op in queryset:
            try:
                services.set_lifecycle(widget=op.widget, operator=op, state=state)
            except Exception as exc:  # noqa: BLE001 - shown to the admin, per operator
                self.message_user(request, f"{op.public_id}: {exc}", level=messages.ERROR)

    # The lifecycle moves change what the operator receives (revoke is final): they take the
    # permission to change external operators, never view alone.
    @admin.action(description="Pause (hold deliveries)", permissions=["change"])
    def pause(self, request, queryset):
        self._move(request, queryset, ExternalOperator.State.PAUSED)

    @admin.action(description="Activate", permissions=["change"])
    def activate(self, request, queryset):
        self._move(request, queryset, ExternalOperator.State.ACTIVE)

    @admin.action(description="Revoke (kill switch, final)", permissions=["change"])
    def revoke(self, request, queryset):
        self._move(request, queryset, ExternalOperator.State.REVOKED)

    @admin.action(description="Force-drain a rotation", permissions=["change"])
    def force_drain(self, request, queryset):
        for op in queryset:
            try:
                services.force_drain(widget=op.widget, operator=op)
            except Exception as exc:  # noqa: BLE001 - shown to the admin, per operator
                self.message_user(request, f"{op.public_id}: {exc}", level=messages.ERROR)


@admin.register(Call)
class CallAdmin(IssuableWidgetsOnly, admin.ModelAdmin):
    """SECURITY: a call names a widget's chat and carries the causation id its reply must quote, so
    the page reaches the same widgets as the operators' page."""

    list_display = ("causation_id", "operator", "chat", "type", "created_at", "consumed_at", "outcome")
    list_filter = ("type", "outcome")
    readonly_fields = [f.name for f in Call._meta.fields]


@admin.register(Probe)
class ProbeAdmin(IssuableWidgetsOnly, admin.ModelAdmin):
    list_display = ("public_id", "operator", "created_at")
    readonly_fields = [f.name for f in Probe._meta.fields]
