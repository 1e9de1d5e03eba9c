from django import forms
from django.contrib import admin
from django.utils import timezone

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
        try:
            services.check_text(cleaned.get("text") or "")
        except AppError as exc:
            self.add_error("text", exc.detail)
        return cleaned


@admin.register(CannedResponse)
class CannedResponseAdmin(admin.ModelAdmin):
    """Canned responses per widget. The form checks the title, the text's length and its variables
    as the API does; the model's constraint keeps shortcuts unique per widget."""

    form = CannedResponseForm
    list_display = ("shortcut", "title", "language", "widget", "updated_at")
    list_filter = ("language",)
    search_fields = ("shortcut", "title", "text", "widget__button_guid")
    list_select_related = ("widget",)
    raw_id_fields = ("widget",)
    readonly_fields = ("created_at", "updated_at")

    def save_model(self, request, obj, form, change):
        if change:
            obj.updated_at = timezone.now()
        super().save_model(request, obj, form, change)
