from django import forms
from django.contrib import admin

from apps.core.admin_site import IssuableWidgetsOnly
from apps.core.errors import AppError

from . import services
from .models import Macro


class MacroForm(forms.ModelForm):
    class Meta:
        model = Macro
        fields = ["widget", "name", "visibility", "agent", "actions"]

    def clean(self):
        cleaned = super().clean()
        widget = cleaned.get("widget") or getattr(self.instance, "widget", None)
        if widget is None:
            return cleaned
        agent = cleaned.get("agent")
        if agent is not None and agent.widget_id != widget.pk:
            self.add_error("agent", "Not an operator of this widget.")
            return cleaned
        try:
            services.check_macro(
                widget=widget, visibility=cleaned.get("visibility"), agent=agent, actions=cleaned.get("actions")
            )
        except AppError as exc:
            for path, messages in (exc.errors or {"actions": [exc.detail]}).items():
                field = "agent" if path == "agent_id" else "actions"
                self.add_error(field, f"{path}: {' '.join(messages)}" if field == "actions" else " ".join(messages))
        return cleaned


@admin.register(Macro)
class MacroAdmin(IssuableWidgetsOnly, admin.ModelAdmin):
    """Macros per widget, checked and written by the same service as the API (audited).

    SECURITY: a macro writes to a widget's visitors, so a staff user reaches only the widgets an API
    token could be issued for (`issuable_widgets`)."""

    form = MacroForm
    list_display = ("name", "visibility", "agent", "widget", "updated_at")
    list_filter = ("visibility",)
    search_fields = ("name", "widget__button_guid")
    list_select_related = ("widget", "agent")
    raw_id_fields = ("widget", "agent")
    readonly_fields = ("created_at", "updated_at")

    def save_model(self, request, obj, form, change):
        if change:
            changes = {name: form.cleaned_data[name] for name in form.changed_data}
            services.update_macro(widget=obj.widget, macro=obj, changes=changes)
        else:
            obj.pk = services.create_macro(
                widget=obj.widget, name=obj.name, visibility=obj.visibility, agent=obj.agent, actions=obj.actions
            ).pk
        obj.refresh_from_db()

    def delete_model(self, request, obj):
        services.delete_macro(widget=obj.widget, macro=obj)

    def delete_queryset(self, request, queryset):
        for macro in queryset.select_related("widget"):
            self.delete_model(request, macro)
