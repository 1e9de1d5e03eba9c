"""Django admin: the web cabinet's staff side for accounts, widgets and API tokens.

Tokens are issued here through the same service as `issue_token`; the plaintext is shown once in
the confirmation message and never again. Tokens are revoked, never edited.

SECURITY: issuing a token is reading and writing a tenant's data, so `core.add_apitoken` is not
enough. A staff user issues (and sees and revokes) tokens only of the widgets their own account
owns, unless they hold `core.issue_for_any_widget` (or are a superuser); a token with any
sensitive scope (catalogue `(S)`: AI credentials, secrets) also needs `core.issue_sensitive_scopes`.
"""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.http import HttpResponseRedirect
from django.urls import reverse
from django.utils import timezone

from apps.core import services
from apps.core.admin_site import CountsWhatGoesAlong, IssuableWidgetsOnly
from apps.core.auth import scopes as catalogue
from apps.core.auth.availability import preset_label, scope_label
from apps.core.models import Account, ApiToken, Widget
from apps.core.services import issuable_widgets


class DeletesWidgets(CountsWhatGoesAlong):
    """Deleting widgets and accounts (with their widgets), through `services.delete_widget`, in
    batches. Contacts leave by erasure only (apps.privacy.admin), so a widget that has any is not
    deleted here."""

    def delete_model(self, request, obj):
        for owned in self.owned(obj):
            if isinstance(owned, Widget):
                services.delete_widget(widget=owned)
        if not isinstance(obj, Widget):
            obj.delete()


class OwnerMovesNeedAnyWidget:
    """SECURITY: who owns a widget decides whose widgets a staff user reaches (`issuable_widgets`),
    so the owner of an existing row (`owner_field`) is changed only by a staff user who reaches every
    widget (`core.issue_for_any_widget`); otherwise moving another account's widget to their own
    account, or that account to their user, would bring its tokens, secrets and data into reach."""

    owner_field = ""

    def get_readonly_fields(self, request, obj=None):
        fields = tuple(super().get_readonly_fields(request, obj))
        if obj is not None and not request.user.has_perm("core.issue_for_any_widget"):
            return (*fields, self.owner_field)
        return fields


@admin.register(Account)
class AccountAdmin(IssuableWidgetsOnly, OwnerMovesNeedAnyWidget, DeletesWidgets, admin.ModelAdmin):
    tenant, tenant_is_account = "pk", True
    owner_field = "user"
    list_display = ("id", "user", "name", "surname", "seats", "created_at")
    search_fields = ("user__email", "name", "surname")
    raw_id_fields = ("user",)

    def owned(self, obj) -> list:
        return [obj, *Widget.objects.filter(account=obj).order_by("pk")]


class WidgetAdmin(IssuableWidgetsOnly, OwnerMovesNeedAnyWidget, DeletesWidgets, admin.ModelAdmin):
    tenant = "pk"
    owner_field = "account"
    list_display = ("id", "name", "account", "button_guid", "api_enabled", "created_at")
    list_filter = ("api_enabled",)
    search_fields = ("name", "button_guid", "account__user__email")
    readonly_fields = ("button_guid", "created_at")
    raw_id_fields = ("account",)

    def save_model(self, request, obj, form, change):
        # Through the services: audited with the staff user as actor, the config event emitted.
        if not change:
            obj.pk = services.add_widget(account=obj.account, name=obj.name, enable_api=obj.api_enabled).pk
        else:
            services.update_widget(widget=obj, changes={name: form.cleaned_data[name] for name in form.changed_data})
        obj.refresh_from_db()


admin.site.register(Widget, WidgetAdmin)


class IssueTokenForm(forms.ModelForm):
    preset = forms.ChoiceField(
        choices=[("", "— choose scopes below —")] + [(p, p) for p in sorted(catalogue.PRESETS)],
        required=False,
        help_text="A preset replaces the whole scope selection.",
    )
    scope_choices = forms.MultipleChoiceField(
        choices=[
            (s, f"{s}{' (S)' if s in catalogue.SENSITIVE_SCOPES else ''}: {catalogue.CATALOGUE[s][0]}")
            for s in sorted(catalogue.ALL_SCOPES)
        ],
        required=False,
        widget=forms.CheckboxSelectMultiple,
        label="Scopes",
    )
    expires_in_days = forms.IntegerField(required=False, min_value=1, help_text="Empty: never expires.")

    class Meta:
        model = ApiToken
        fields = ("widget", "name")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # Labelled per request from the mounted routes: scopes no endpoint accepts yet say "coming".
        self.fields["preset"].choices = [("", "— choose scopes below —")] + [
            (p, preset_label(p)) for p in sorted(catalogue.PRESETS)
        ]
        self.fields["scope_choices"].choices = [(s, scope_label(s)) for s in sorted(catalogue.ALL_SCOPES)]
        # A widget outside the user's reach reads as one that does not exist ("Select a valid choice").
        self.fields["widget"].queryset = issuable_widgets(self.request.user)

    def clean(self):
        data = super().clean()
        chosen = list(catalogue.PRESETS[data["preset"]]) if data.get("preset") else data.get("scope_choices")
        if not chosen:
            raise forms.ValidationError("Choose a preset or at least one scope.")
        sensitive = sorted(set(chosen) & catalogue.SENSITIVE_SCOPES)
        if sensitive and not self.request.user.has_perm("core.issue_sensitive_scopes"):
            raise forms.ValidationError(
                f"Sensitive scopes ({', '.join(sensitive)}) need the permission to issue sensitive scopes."
            )
        data["chosen_scopes"] = chosen
        return data


@admin.register(ApiToken)
class ApiTokenAdmin(IssuableWidgetsOnly, admin.ModelAdmin):
    list_display = ("prefix", "name", "widget", "scope_count", "expires_at", "revoked_at", "last_used_at")
    list_filter = ("revoked_at",)
    search_fields = ("prefix", "name", "widget__name", "widget__button_guid")
    actions = ["revoke"]
    raw_id_fields = ("widget",)

    def scope_count(self, obj):
        return len(obj.scopes)

    def get_form(self, request, obj=None, **kwargs):
        if obj is None:
            kwargs["form"] = IssueTokenForm
        form = super().get_form(request, obj, **kwargs)
        form.request = request  # a fresh class per call: the user whose reach the form checks
        return form

    def get_fields(self, request, obj=None):
        if obj is None:
            return ("widget", "name", "preset", "scope_choices", "expires_in_days")
        return ("widget", "name", "prefix", "scopes", "expires_at", "revoked_at", "last_used_at", "created_at")

    def get_readonly_fields(self, request, obj=None):
        if obj is None:
            return ()
        return self.get_fields(request, obj)

    def save_model(self, request, obj, form, change):
        if change:
            return  # tokens are immutable: revoke and re-issue
        days = form.cleaned_data.get("expires_in_days")
        issued = services.issue_token(
            widget=form.cleaned_data["widget"],
            scopes=form.cleaned_data["chosen_scopes"],
            name=form.cleaned_data.get("name") or "",
            expires_in=days * 86400 if days else None,
        )
        obj.pk = issued.token.pk
        obj.refresh_from_db()
        messages.warning(
            request,
            f"Token issued. Copy it now, it will not be shown again: {issued.plaintext}",
        )

    def has_change_permission(self, request, obj=None):
        return obj is None and super().has_change_permission(request, obj)

    # Tokens are revoked, never deleted: the row is the trail of what a token could do and when it
    # stopped. Deleting one here revokes it (the delete permission and the page stay Django's).
    def delete_model(self, request, obj):
        services.revoke_token(token=obj)

    def delete_queryset(self, request, queryset):
        for token in queryset.filter(revoked_at__isnull=True):
            services.revoke_token(token=token)

    def response_delete(self, request, obj_display, obj_id):
        self.message_user(request, f"The token {obj_display} was revoked (tokens are kept, never deleted).")
        return HttpResponseRedirect(reverse("admin:core_apitoken_changelist"))

    def get_actions(self, request):
        # "Delete selected" would only revoke: the revoke action says so.
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)
        return actions

    # Revoking cannot be undone: it takes the permission to change tokens, never view alone.
    @admin.action(description="Revoke selected tokens (immediate)", permissions=["change"])
    def revoke(self, request, queryset):
        count = 0
        for token in queryset.filter(revoked_at__isnull=True):
            services.revoke_token(token=token)
            count += 1
        self.message_user(request, f"Revoked {count} token(s) at {timezone.now():%Y-%m-%d %H:%M:%S} UTC.")
