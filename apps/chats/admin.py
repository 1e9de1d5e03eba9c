"""Chat labels in Django admin: the API's rules (LabelInput) and services, so a label made here is
audited and deleting one takes it off every chat with the same events."""

from django import forms
from django.contrib import admin
from rest_framework.exceptions import ValidationError

from apps.core.admin_site import IssuableWidgetsOnly
from apps.core.api.serializers import validate_input

from . import services
from .label_input import LabelInput
from .models import Label


class LabelForm(forms.ModelForm):
    class Meta:
        model = Label
        fields = ["widget", "name", "color"]

    def clean(self):
        cleaned = super().clean()
        data = {"name": cleaned.get("name") or "", "color": cleaned.get("color") or None}
        try:
            valid = validate_input(LabelInput, data)
        except ValidationError as exc:
            for field, messages in exc.detail.items():
                self.add_error(field if field in self.fields else None, [str(m) for m in messages])
            return cleaned
        cleaned["name"], cleaned["color"] = valid["name"], valid.get("color") or ""
        # The widget is read-only on a change (not a form field): the row's own widget then.
        widget = cleaned.get("widget") or getattr(self.instance, "widget", None)
        if widget is not None:
            taken = Label.objects.filter(widget=widget, key=services.label_key(valid["name"])).exclude(
                pk=self.instance.pk
            )
            if taken.exists():
                self.add_error(
                    "name", "This widget already has a label of this name (compared without regard to case)."
                )
        return cleaned


@admin.register(Label)
class LabelAdmin(IssuableWidgetsOnly, admin.ModelAdmin):
    """Chat labels per widget.

    SECURITY: a widget's labels are its operators' data, so a staff user reaches only the widgets an
    API token could be issued for (`issuable_widgets`)."""

    form = LabelForm
    list_display = ("name", "color", "widget", "created_at")
    search_fields = ("name", "widget__button_guid")
    list_select_related = ("widget",)
    raw_id_fields = ("widget",)
    readonly_fields = ("created_at",)

    # Through the services: audited with the staff user as actor.
    def save_model(self, request, obj, form, change):
        if change:
            changes = {name: form.cleaned_data[name] for name in form.changed_data if name in ("name", "color")}
            services.update_label(widget=obj.widget, label=obj, changes=changes)
        else:
            obj.pk = services.create_label(widget=obj.widget, name=obj.name, color=obj.color).pk
        obj.refresh_from_db()

    def delete_model(self, request, obj):
        services.delete_label(widget=obj.widget, label=obj)

    def delete_queryset(self, request, queryset):
        for label in queryset.select_related("widget"):
            self.delete_model(request, label)
