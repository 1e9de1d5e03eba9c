"""The Django admin's site: Django's own, with its sign-in rate limited like the console's.

Installed as the default site by `apps.core.apps.AdminConfig` (Django's documented way to replace
`admin.site`), so every `admin.register` and `admin.site.urls` uses it.
"""

from __future__ import annotations

import math

from django.contrib import admin
from django.template.response import TemplateResponse
from django.utils.decorators import method_decorator
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from django.views.decorators.cache import never_cache

from .errors import flatten_errors
from .models import Account, Widget
from .ratelimit import Decision, SignInBudgets, client_address
from .services import issuable_accounts, issuable_widgets, rows_referring_to

# Sign-in attempts: the console's limits, under budgets of this page's own.
LOGIN = SignInBudgets.of_page("admin_login", "username")


class AdminSite(admin.AdminSite):
    """SECURITY: every sign-in POST spends the LOGIN budgets before Django's login view checks
    the password; past a limit the answer is 429 with Retry-After and the password is not checked."""

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
