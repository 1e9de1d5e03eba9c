"""Signing in and out of the console, its language and the widget an operator of several works in:
thin views over apps.console.services and Django's session."""

from __future__ import annotations

import math

from django.conf import settings
from django.contrib.auth import get_user_model
from django.http import Http404, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from apps.core.ratelimit import SignInBudgets, client_address

from . import access, forms, services, signin
from .access import operator_required
from .views import parse_id

# Sign-in attempts (SignInBudgets: per address, per address and e-mail, per e-mail). The per-e-mail
# ceiling is far above what one address may spend, so it slows a guess spread over many addresses
# without letting one address lock the e-mail out for its owner.
LOGIN = SignInBudgets.of_page("console_login", "email")
FAILED_LOGIN = gettext_lazy("The e-mail or the password is incorrect.")


def _safe_next(request) -> str:
    target = request.POST.get("next") or request.GET.get("next") or ""
    if target.startswith("/console/") and url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return target
    return reverse("console:chats")


def _authenticate(email: str, password: str):
    """The active operator user with this e-mail and password, or None. A miss costs a password
    hash like a hit, so the answer time does not tell whether the e-mail exists."""
    User = get_user_model()
    candidates = [
        user for user in User.objects.filter(email__iexact=email, is_active=True) if user.has_usable_password()
    ]
    if not candidates:
        User().set_password(password)
        return None
    for user in candidates:
        if user.check_password(password) and access.may_sign_in(user):
            return user
    return None


@never_cache
@require_http_methods(["GET", "POST"])
def login_view(request):
    if request.method == "GET" and access.resolve(request)[0] is not None:
        return HttpResponseRedirect(_safe_next(request))
    form = forms.LoginForm(request.POST or None)
    context = {"form": form, "next": _safe_next(request), "error": None}
    if request.method == "POST":
        email = (request.POST.get("email") or "").strip().lower()[:254]
        limited = LOGIN.refusal(client_address(request), email)
        if limited is not None:
            wait = max(1, math.ceil(limited.retry_after))
            minutes = math.ceil(wait / 60)
            context["error"] = ngettext(
                "Too many sign-in attempts. Try again in %(minutes)d minute.",
                "Too many sign-in attempts. Try again in %(minutes)d minutes.",
                minutes,
            ) % {"minutes": minutes}
            response = render(request, "console/login.html", context, status=429)
            response["Retry-After"] = str(wait)
            return response
        if form.is_valid():
            user = _authenticate(form.cleaned_data["email"], form.cleaned_data["password"])
            if user is not None:
                return signin.first_factor_passed(request, user, method="password", next_url=_safe_next(request))
            signin.first_factor_failed(request, email=email, method="password", reason="bad_credentials")
            context["error"] = FAILED_LOGIN
        return render(request, "console/login.html", context, status=400 if form.errors else 401)
    return render(request, "console/login.html", context)


@require_POST
def logout_view(request):
    services.sign_out(request)
    return HttpResponseRedirect(reverse("console:login"))


@require_POST
def set_language(request):
    """The console's language switcher (signed in or not): the choice is kept in Django's language
    cookie, which the console's middleware reads before the browser's Accept-Language."""
    form = forms.LanguageForm(request.POST)
    if not form.is_valid():
        return HttpResponse(_("Unknown language."), status=400, content_type="text/plain; charset=utf-8")
    language = form.cleaned_data["language"]
    response = HttpResponseRedirect(_safe_next(request), status=303)
    response.set_cookie(
        settings.LANGUAGE_COOKIE_NAME,
        language,
        max_age=settings.LANGUAGE_COOKIE_AGE,
        path=settings.LANGUAGE_COOKIE_PATH,
        domain=settings.LANGUAGE_COOKIE_DOMAIN,
        secure=settings.LANGUAGE_COOKIE_SECURE,
        httponly=settings.LANGUAGE_COOKIE_HTTPONLY,
        samesite=settings.LANGUAGE_COOKIE_SAMESITE,
    )
    return response


@require_POST
@operator_required
def switch_widget(request):
    wanted = parse_id(request.POST.get("widget"))
    if not any(row.widget_id == wanted for row in request.agent_rows):
        raise Http404("No such widget.")
    request.session[access.SESSION_WIDGET_KEY] = wanted
    return HttpResponseRedirect(reverse("console:chats"))
