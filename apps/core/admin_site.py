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

from .ratelimit import Decision, SignInBudgets, client_address
from .services import issuable_widgets

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


class IssuableWidgetsOnly:
    """ModelAdmin mixin for a model with a `widget` whose rows hand out or redirect a tenant's
    credentials or data (bot tokens, signing secrets, where events or API keys are sent): rows and
    widget choices are limited to the widgets the staff user may issue credentials for
    (`apps.core.services.issuable_widgets`), as the token admin is."""

    def get_queryset(self, request):
        return super().get_queryset(request).filter(widget__in=issuable_widgets(request.user))

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        if db_field.name == "widget":
            kwargs["queryset"] = issuable_widgets(request.user)
        return super().formfield_for_foreignkey(db_field, request, **kwargs)
