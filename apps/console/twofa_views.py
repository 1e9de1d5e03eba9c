"""Two-factor sign-in's pages: the code step and enrolment after the first factor, and the
operator's own page to enrol, make new recovery codes or turn two-factor sign-in off. Thin views
over apps.console.signin (the sign-in) and apps.console.twofa (the devices)."""

from __future__ import annotations

import math

from django import forms
from django.contrib import messages
from django.http import HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from . import signin, twofa
from .access import operator_required
from .views import page_context


class CodeForm(forms.Form):
    code = forms.CharField(
        label=gettext_lazy("Code"),
        max_length=64,
        error_messages={"required": gettext_lazy("Enter the code.")},
        widget=forms.TextInput(
            attrs={"autocomplete": "one-time-code", "dir": "ltr", "spellcheck": "false", "autocapitalize": "off"}
        ),
    )


WRONG_CODE = gettext_lazy("That code is not right. Codes change every 30 seconds, and each works once.")
WRONG_RECOVERY_CODE = gettext_lazy("That recovery code is not right, or it has been used already.")


def _wrong(method: str) -> str:
    return str(WRONG_RECOVERY_CODE if method == twofa.RECOVERY_CODE else WRONG_CODE)


def _minutes(seconds: float) -> str:
    minutes = max(1, math.ceil(seconds / 60))
    return ngettext(
        "Too many codes tried. Try again in %(minutes)d minute.",
        "Too many codes tried. Try again in %(minutes)d minutes.",
        minutes,
    ) % {"minutes": minutes}


def _throttled(seconds: int) -> str:
    return ngettext(
        "Too many wrong codes in a row. Wait %(seconds)d second before the next one.",
        "Too many wrong codes in a row. Wait %(seconds)d seconds before the next one.",
        seconds,
    ) % {"seconds": seconds}


def _limited(request, template: str, context: dict, decision) -> HttpResponse:
    wait = max(1, math.ceil(decision.retry_after))
    response = render(request, template, {**context, "error": _minutes(wait)}, status=429)
    response["Retry-After"] = str(wait)
    return response


def _refused(request, user, check, *, template: str, context: dict) -> HttpResponse:
    """The page again with why the code was refused (nothing changed)."""
    if check.wait:
        return render(request, template, {**context, "error": _throttled(check.wait)}, status=429)
    signin.second_factor_failed(request, user, method=check.method, reason="wrong_code")
    return render(request, template, {**context, "error": _wrong(check.method)}, status=401)


def _to_login(request, message: str = "") -> HttpResponse:
    if message:
        messages.info(request, message)
    return HttpResponseRedirect(reverse("console:login"))


EXPIRED = gettext_lazy("Your sign-in took too long. Enter your e-mail and password again.")


# The device being enrolled in this session (see twofa.start_enrolment).
ENROL_DEVICE_KEY = "console_enrol_device"


def _enrolment(request, user, form) -> dict:
    device = twofa.start_enrolment(user, device_id=request.session.get(ENROL_DEVICE_KEY))
    request.session[ENROL_DEVICE_KEY] = device.pk
    issuer = request.get_host().split(":")[0]
    uri = twofa.provisioning_uri(device, issuer=issuer, account=user.email or user.get_username())
    return {
        "form": form,
        "qr": twofa.qr_svg(uri, title=_("QR code for your authenticator app")),
        "secret": twofa.secret_text(device),
        "account": user.email or user.get_username(),
        "issuer": issuer,
        "error": None,
    }


# --- after the first factor ------------------------------------------------------------------------------


@never_cache
@require_http_methods(["GET", "POST"])
def login_code(request):
    held = signin.pending(request)
    if held is None or held.step != "code":
        return _to_login(request, EXPIRED if request.method == "POST" else "")
    form = CodeForm(request.POST or None)
    context = {"form": form, "error": None, "recovery_left": twofa.recovery_codes_left(held.user)}
    template = "console/login_code.html"
    if request.method == "POST":
        if not form.is_valid():
            return render(request, template, context, status=400)
        limited = signin.code_refusal(request, held.user)
        if limited is not None:
            return _limited(request, template, context, limited)
        check = twofa.verify(held.user, form.cleaned_data["code"])
        if not check.passed:
            return _refused(request, held.user, check, template=template, context=context)
        return signin.complete(
            request,
            held.user,
            method=check.method,
            next_url=held.next_url,
            device=check.device,
            first_factor=held.method,
        )
    return render(request, template, context)


@never_cache
@require_http_methods(["GET", "POST"])
def login_enrol(request):
    held = signin.pending(request)
    if held is None or held.step != "enrol":
        return _to_login(request, EXPIRED if request.method == "POST" else "")
    form = CodeForm(request.POST or None)
    context = {**_enrolment(request, held.user, form), "required": True}
    template = "console/login_enrol.html"
    if request.method == "POST":
        if not form.is_valid():
            return render(request, template, context, status=400)
        limited = signin.code_refusal(request, held.user)
        if limited is not None:
            return _limited(request, template, context, limited)
        check, codes = twofa.confirm_enrolment(
            held.user, form.cleaned_data["code"], device_id=request.session.get(ENROL_DEVICE_KEY)
        )
        if not check.passed:
            return _refused(request, held.user, check, template=template, context=context)
        signin.complete(
            request,
            held.user,
            method=check.method,
            next_url=held.next_url,
            device=check.device,
            first_factor=held.method,
        )
        request.session.pop(ENROL_DEVICE_KEY, None)
        # The console opens once the recovery codes have been shown.
        signin.keep_recovery_codes(request, codes, next_url=held.next_url)
        return HttpResponseRedirect(reverse("console:recovery-codes"), status=303)
    return render(request, template, context)


# --- the operator's own page -----------------------------------------------------------------------------


def _account_context(request, **extra) -> dict:
    user = request.user
    return page_context(
        request,
        enrolled=twofa.is_enrolled(user),
        required=twofa.required_for(user),
        recovery_left=twofa.recovery_codes_left(user),
        account_page=True,
        **extra,
    )


@never_cache
@require_http_methods(["GET"])
@operator_required
def two_factor(request):
    return render(request, "console/two_factor.html", _account_context(request, form=CodeForm(), error=None))


@never_cache
@require_http_methods(["GET", "POST"])
@operator_required
def two_factor_enrol(request):
    user = request.user
    if twofa.is_enrolled(user):
        return HttpResponseRedirect(reverse("console:two-factor"), status=303)
    form = CodeForm(request.POST or None)
    context = page_context(request, **_enrolment(request, user, form), required=False, account_page=True)
    template = "console/two_factor_enrol.html"
    if request.method == "POST":
        if not form.is_valid():
            return render(request, template, context, status=400)
        limited = signin.code_refusal(request, user)
        if limited is not None:
            return _limited(request, template, context, limited)
        check, codes = twofa.confirm_enrolment(
            user, form.cleaned_data["code"], device_id=request.session.get(ENROL_DEVICE_KEY)
        )
        if not check.passed:
            return _refused(request, user, check, template=template, context=context)
        request.session.pop(ENROL_DEVICE_KEY, None)
        signin.mark_verified(request, check.device)
        signin.keep_recovery_codes(request, codes, next_url=reverse("console:two-factor"))
        return HttpResponseRedirect(reverse("console:recovery-codes"), status=303)
    return render(request, template, context)


def _with_code(request, action, *, refused_template="console/two_factor.html"):
    """Run `action(user, code)` for a posted current code, rate limited; the account page again
    with the refusal otherwise. Returns (check or None, result, refusal response or None)."""
    user = request.user
    form = CodeForm(request.POST)
    context = _account_context(request, form=form, error=None)
    if not form.is_valid():
        return None, None, render(request, refused_template, context, status=400)
    limited = signin.code_refusal(request, user)
    if limited is not None:
        return None, None, _limited(request, refused_template, context, limited)
    check, result = action(user, form.cleaned_data["code"])
    if not check.passed:
        return check, None, _refused(request, user, check, template=refused_template, context=context)
    return check, result, None


@require_POST
@operator_required
def two_factor_off(request):
    user = request.user
    if twofa.required_for(user):
        context = _account_context(
            request, form=CodeForm(), error=_("A widget you work in requires two-factor sign-in, so it stays on.")
        )
        return render(request, "console/two_factor.html", context, status=409)
    if not twofa.is_enrolled(user):
        return HttpResponseRedirect(reverse("console:two-factor"), status=303)
    _check, _none, refusal = _with_code(request, lambda u, code: (twofa.turn_off(u, code), None))
    if refusal is not None:
        return refusal
    messages.success(request, _("Two-factor sign-in is off."))
    return HttpResponseRedirect(reverse("console:two-factor"), status=303)


@require_POST
@operator_required
def new_recovery_codes(request):
    if not twofa.is_enrolled(request.user):
        return HttpResponseRedirect(reverse("console:two-factor"), status=303)
    _check, codes, refusal = _with_code(request, twofa.renew_recovery_codes)
    if refusal is not None:
        return refusal
    signin.keep_recovery_codes(request, codes, next_url=reverse("console:two-factor"))
    return HttpResponseRedirect(reverse("console:recovery-codes"), status=303)


@never_cache
@require_http_methods(["GET"])
@operator_required
def recovery_codes(request):
    """The recovery codes just made, shown this once."""
    codes, next_url = signin.pop_recovery_codes(request)
    if not codes:
        return HttpResponseRedirect(reverse("console:two-factor"), status=303)
    return render(
        request,
        "console/recovery_codes.html",
        page_context(request, codes=codes, next_url=next_url or reverse("console:chats"), account_page=True),
    )
