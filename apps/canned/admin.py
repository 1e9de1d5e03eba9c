from django import forms
from django.contrib import admin

from apps.core.admin_site import IssuableWidgetsOnly
from apps.core.api.serializers import InvisibleCharacter, normalize_label
from apps.core.errors import AppError

from . import services
from .models import TEXT_MAX, CannedResponse


class CannedResponseForm(forms.ModelForm):
    class Meta:
        model = CannedResponse
        fields = ["widget", "shortcut", "title", "text", "language"]

    def clean_title(self):
        try:
            return normalize_label(self.cleaned_data["title"])
        except InvisibleCharacter as exc:
            raise forms.ValidationError(
                f"Must not contain invisible or bidirectional control characters ({exc.code_point})."
            ) from None

    def clean_text(self):
        text = self.cleaned_data["text"]
        if len(text) > TEXT_MAX:
            raise forms.ValidationError(f"At most {TEXT_MAX} characters.")
        return text

    def clean(self):
        cleaned = super().clean()
        # On a change the widget is read-only (not a form field), so Django leaves the per-widget
        # shortcut constraint unchecked: checked here against the row's own widget.
        shortcut = cleaned.get("shortcut")
        if "widget" not in self.fields and shortcut:
            taken = CannedResponse.objects.filter(widget=self.instance.widget, shortcut=shortcut).exclude(
                pk=self.instance.pk
            )
            if taken.exists():
                self.add_error("shortcut", "This widget already has a canned response with this shortcut.")
        try:
            services.check_text(cleaned.get("text") or "")
        except AppError as exc:
            self.add_error("text", exc.detail)
        return cleaned


@admin.register(CannedResponse)
class CannedResponseAdmin(IssuableWidgetsOnly, admin.ModelAdmin):
    """Canned responses per widget. The form checks the title, the text's length and its variables
    as the API does, and that the shortcut is free in the widget.

    SECURITY: a widget's operators send these texts to its visitors, so a staff user reaches only
    the widgets an API token could be issued for (`issuable_widgets`)."""

    form = CannedResponseForm
    list_display = ("shortcut", "title", "language", "widget", "updated_at")
    list_filter = ("language",)
    search_fields = ("shortcut", "title", "text", "widget__button_guid")
    list_select_related = ("widget",)
    raw_id_fields = ("widget",)
    readonly_fields = ("created_at", "updated_at")

    # Through the services: audited with the staff user as actor.
    def save_model(self, request, obj, form, change):
        if change:
            changes = {name: form.cleaned_data[name] for name in form.changed_data}
            services.update_canned_response(widget=obj.widget, canned=obj, changes=changes)
        else:
            obj.pk = services.create_canned_response(
                widget=obj.widget, shortcut=obj.shortcut, title=obj.title, text=obj.text, language=obj.language
            ).pk
        obj.refresh_from_db()

    def delete_model(self, request, obj):
        services.delete_canned_response(widget=obj.widget, canned=obj)

    def delete_queryset(self, request, queryset):
        for canned in queryset.select_related("widget"):
            self.delete_model(request, canned)
