"""The Django admin's site: Django's own, with its sign-in rate limited like the console's and
behind the second factor (django-otp's admin pattern) for whoever must pass one.

Installed as the default site by `apps.core.apps.AdminConfig` (Django's documented way to replace
`admin.site`), so every `admin.register` and `admin.site.urls` uses it.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from django import forms
from django.contrib import admin
from django.contrib.admin.forms import AdminAuthenticationForm
from django.template.response import TemplateResponse
from django.utils.decorators import method_decorator
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext
from django.views.decorators.cache import never_cache
from django_otp import devices_for_user, user_has_device
from django_otp.admin import OTPAdminAuthenticationForm
from django_otp.plugins.otp_totp.models import TOTPDevice

from .errors import flatten_errors
from .models import Account, Widget
from .ratelimit import Decision, SignInBudgets, client_address
from .services import issuable_accounts, issuable_widgets, rows_referring_to

# Sign-in attempts: the console's limits, under budgets of this page's own.
LOGIN = SignInBudgets.of_page("admin_login", "username")

# Who else must pass a second factor besides users with a device: the apps above the core say (the
# console: a user whose widget requires two-factor sign-in), registered in their AppConfig.ready().
_SECOND_FACTOR_POLICIES: list[Callable[[object], bool]] = []


def require_second_factor_when(policy: Callable[[object], bool]) -> None:
    if policy not in _SECOND_FACTOR_POLICIES:
        _SECOND_FACTOR_POLICIES.append(policy)


def second_factor_required(user) -> bool:
    """Whether `user` signs in to the admin with a second factor: they have a confirmed device, or a
    registered policy requires it."""
    return user_has_device(user) or any(policy(user) for policy in _SECOND_FACTOR_POLICIES)


class AdminLoginForm(OTPAdminAuthenticationForm):
    """The username, the password and, for a user who must pass a second factor, a code: six digits
    from the authenticator app or one recovery code (the device is chosen by the code's shape, so
    nobody picks one from a list). A user who must but has no device enrols in the console first."""

    otp_device = forms.CharField(required=False, widget=forms.HiddenInput)
    otp_token = forms.CharField(
        required=False,
        label=gettext_lazy("Two-factor code"),
        widget=forms.TextInput(attrs={"autocomplete": "one-time-code", "dir": "ltr", "autocapitalize": "off"}),
    )
    otp_error_messages = {
        **OTPAdminAuthenticationForm.otp_error_messages,
        "token_required": gettext_lazy("Enter the code from your authenticator app, or a recovery code."),
        "invalid_token": gettext_lazy("That code is not right. Codes change every 30 seconds, and each works once."),
    }

    def clean(self):
        cleaned = AdminAuthenticationForm.clean(self)
        user = self.get_user()
        if user is None or not second_factor_required(user):
            return cleaned
        if not user_has_device(user):
            raise forms.ValidationError(
                gettext_lazy(
                    "Set up two-factor sign-in in the operator console first (your account menu, Two-factor sign-in)."
                ),
                code="enrol_first",
            )
        if not cleaned.get("otp_device"):
            cleaned["otp_device"] = self._device_for(user, cleaned.get("otp_token") or "")
        self.clean_otp(user)
        return cleaned

    @staticmethod
    def _device_for(user, token: str) -> str:
        digits = token.strip().isdigit()
        for device in devices_for_user(user):
            if isinstance(device, TOTPDevice) == digits:
                return device.persistent_id
        return ""


class AdminSite(admin.AdminSite):
    """SECURITY: every sign-in POST spends the LOGIN budgets before Django's login view checks
    the password; past a limit the answer is 429 with Retry-After and the password is not checked.
    A user who must pass a second factor (`second_factor_required`) reaches the admin only with a
    session verified by one (a code on this sign-in page, or the console's code step)."""

    login_form = AdminLoginForm
    login_template = "admin/login_two_factor.html"

    def has_permission(self, request):
        if not super().has_permission(request):
            return False
        return request.user.is_verified() or not second_factor_required(request.user)

    @method_decorator(never_cache)
    def login(self, request, extra_context=None):
        if request.method == "POST":
            # Usernames are matched case-sensitively; one budget for every spelling of a name.
            username = (request.POST.get("username") or "").strip().lower()[:254]
            limited = LOGIN.refusal(client_address(request), username)
            if limited is not None:
                return self._limited(request, limited)
        return super().login(request, extra_context)

    def _limited(self, request, decision: Decision) -> TemplateResponse:
        wait = max(1, math.ceil(decision.retry_after))
        minutes = math.ceil(wait / 60)
        # The console's sentence, translated in its catalogue.
        message = ngettext(
            "Too many sign-in attempts. Try again in %(minutes)d minute.",
            "Too many sign-in attempts. Try again in %(minutes)d minutes.",
            minutes,
        ) % {"minutes": minutes}
        context = {**self.each_context(request), "title": _("Log in"), "message": message}
        response = TemplateResponse(request, "admin/login_limited.html", context, status=429)
        response["Retry-After"] = str(wait)
        return response


def show_errors(form, errors, *, field_of: dict[str, str] | None = None) -> None:
    """Put the API's validation errors on a Django admin form: DRF's nested `serializer.errors` or
    a `ValidationFailed`'s `errors`. Each goes under the form field its path starts with (renamed by
    `field_of`), the rest of the path in its message; a path naming no form field is a non-field
    error."""
    for path, messages in flatten_errors(errors).items():
        head, _, rest = path.partition(".")
        field = (field_of or {}).get(head, head)
        if rest:
            messages = [f"{rest}: {message}" for message in messages]
        form.add_error(field if field in form.fields else None, messages)


class IssuableWidgetsOnly:
    """SECURITY: ModelAdmin mixin for every page whose rows belong to a tenant (a widget's or an
    account's): rows and the widget and account choices are limited to the widgets the staff user
    may issue credentials for (`apps.core.services.issuable_widgets`) and their accounts
    (`issuable_accounts`), as the token admin is. Another account's row reads as a missing one on
    every view (list, change, delete, history) and no action selects it. A superuser, or a staff
    user with `core.issue_for_any_widget`, reaches every row.

    `tenant` is the lookup from a row to what owns it: a widget (`widget`, the default; `pk` on the
    widget's own page) or, with `tenant_is_account`, an account (`account`; `pk` on the account's
    page). A stored row never moves to another widget (its secret, log and settings belong to the
    widget it was made for)."""

    tenant = "widget"
    tenant_is_account = False

    def get_queryset(self, request):
        reach = issuable_accounts if self.tenant_is_account else issuable_widgets
        return super().get_queryset(request).filter(**{f"{self.tenant}__in": reach(request.user)})

    def get_readonly_fields(self, request, obj=None):
        fields = tuple(super().get_readonly_fields(request, obj))
        if obj is None or self.tenant != "widget" or "widget" in fields:
            return fields
        return ("widget", *fields)

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        if db_field.related_model is Widget:
            kwargs["queryset"] = issuable_widgets(request.user)
        elif db_field.related_model is Account:
            kwargs["queryset"] = issuable_accounts(request.user)
        return super().formfield_for_foreignkey(db_field, request, **kwargs)


class ReadOnlyAdmin:
    """ModelAdmin mixin for rows written elsewhere (a service, the engine, the API): admin adds and
    changes none. `deletable` says whether a staff user holding the delete permission may delete
    one here (a log that is the trail of access is never deleted). Viewing follows Django's view
    permission (or the change permission), as on every page."""

    deletable = False

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return self.deletable and super().has_delete_permission(request, obj)


class CountsWhatGoesAlong:
    """ModelAdmin mixin for a model whose rows take many others along when deleted (a widget's
    chats, a subscription's delivery log). The confirmation page counts the rows each would take
    along (the rows that refer to it and to what `owned` names), one COUNT a model, and names the
    kinds the staff user may not delete, as Django's page does. Django's own page walks every related
    row, and names more keys in one statement than PostgreSQL takes for a large one (a 500). The
    subclass deletes in batches (`delete_model`)."""

    def owned(self, obj) -> list:
        """`obj` and what it owns whose rows are counted too."""
        return [obj]

    def get_deleted_objects(self, objs, request):
        objs = list(objs)
        counts: dict[type, int] = {}
        for obj in objs:
            counts[type(obj)] = counts.get(type(obj), 0) + 1
            for owner in self.owned(obj):
                for model, count in rows_referring_to(owner).items():
                    counts[model] = counts.get(model, 0) + count
        perms_needed = {
            str(model._meta.verbose_name)
            for model in counts
            if self.admin_site.is_registered(model)
            and not self.admin_site.get_model_admin(model).has_delete_permission(request)
        }
        model_count = {str(model._meta.verbose_name_plural): count for model, count in counts.items()}
        return [str(obj) for obj in objs], model_count, perms_needed, []

    def delete_queryset(self, request, queryset):
        for obj in list(queryset):
            self.delete_model(request, obj)
