from django import forms
from django.contrib import admin
from django.utils.html import format_html, format_html_join

from apps.core.admin_site import IssuableWidgetsOnly, ReadOnlyAdmin
from apps.core.errors import ValidationFailed

from . import selectors, services
from .models import AutomationEvaluation, AutomationRule


class AutomationRuleForm(forms.ModelForm):
    class Meta:
        model = AutomationRule
        fields = ["widget", "name", "enabled", "event", "conditions", "actions"]

    def clean(self):
        cleaned = super().clean()
        widget = cleaned.get("widget") or getattr(self.instance, "widget", None)
        if widget is None:
            return cleaned
        members = {name: cleaned[name] for name in ("event", "conditions", "actions") if name in cleaned}
        try:
            cleaned.update(services.validate_rule(widget=widget, data=members))
        except ValidationFailed as exc:
            for path, messages in (exc.errors or {}).items():
                self.add_error(None, f"{path}: {' '.join(messages)}")
        return cleaned


@admin.register(AutomationRule)
class AutomationRuleAdmin(IssuableWidgetsOnly, admin.ModelAdmin):
    """A widget's automation rules. The form checks conditions and actions as the API does and
    writes through the services (audited, the workers' compiled rules refreshed).

    SECURITY: a rule acts on the widget's chats and may post to a URL, so a staff user reaches only
    the widgets an API token could be issued for (`issuable_widgets`)."""

    form = AutomationRuleForm
    list_display = ("name", "event", "enabled", "widget", "updated_at")
    list_filter = ("event", "enabled")
    search_fields = ("name", "widget__button_guid")
    list_select_related = ("widget",)
    raw_id_fields = ("widget",)
    readonly_fields = ("created_at", "updated_at", "last_runs")

    @admin.display(description="Last runs (newest first)")
    def last_runs(self, obj):
        if obj is None or obj.pk is None:
            return "-"
        runs = selectors.list_runs(widget=obj.widget, rule=obj)
        if not runs:
            return "The rule has not run yet."
        rows = format_html_join(
            "",
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            ((run.at.isoformat(), run.chat_id or "", run.outcome, run.detail) for run in runs),
        )
        return format_html(
            "<table><thead><tr><th>At</th><th>Chat</th><th>Outcome</th><th>Detail</th></tr></thead>"
            "<tbody>{}</tbody></table>",
            rows,
        )

    def get_readonly_fields(self, request, obj=None):
        return (*self.readonly_fields, "widget") if obj else self.readonly_fields

    def save_model(self, request, obj, form, change):
        if change:
            changes = {name: form.cleaned_data[name] for name in form.changed_data}
            services.update_rule(widget=obj.widget, rule=obj, changes=changes)
        else:
            obj.pk = services.create_rule(
                widget=obj.widget,
                name=obj.name,
                event=obj.event,
                conditions=obj.conditions,
                actions=obj.actions,
                enabled=obj.enabled,
            ).pk
        obj.refresh_from_db()

    def delete_model(self, request, obj):
        services.delete_rule(widget=obj.widget, rule=obj)

    def delete_queryset(self, request, queryset):
        for rule in queryset.select_related("widget"):
            services.delete_rule(widget=rule.widget, rule=rule)


@admin.register(AutomationEvaluation)
class AutomationEvaluationAdmin(IssuableWidgetsOnly, ReadOnlyAdmin, admin.ModelAdmin):
    """The rules' run log as stored, read only (written by the workers): one row per evaluated event,
    naming the rules that matched or failed; every other rule of the event's version did not match.
    A rule's own runs are on its page."""

    list_display = ("at", "event", "chat_id", "version", "results")
    list_filter = ("event",)
    raw_id_fields = ("widget",)
