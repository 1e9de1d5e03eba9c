"""The public invitation page at /invite/<token>: the invitee sets a name and password and becomes
a human operator of the widget. It is the console's first page for a new operator, so it speaks the
console's languages (apps.console.middleware covers /invite/) and wears its look.

SECURITY: the token in the URL is the credential (only its hash is stored). The page is a Django
form with CSRF protection, is never cached and its Referer names our origin only, never the path
with the token (`strict-origin`: `no-referrer` would make browsers send `Origin: null` with the
form's POST, which Django's CSRF check rightly refuses). An e-mail that already has an
account with a password confirms with that password instead of overwriting it, so an invitation
link can never be used to reset another principal's password, and the page checks that password
at most CONFIRM_ATTEMPTS times per window for one invitation (429 with Retry-After beyond), so a
link is no way around the console sign-in's limits on guessing it.
"""

from __future__ import annotations

import math

from django import forms
from django.contrib.auth import get_user_model, password_validation
from django.shortcuts import render
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import csrf_protect
from django.views.decorators.http import require_http_methods

from apps.agents import selectors, services
from apps.agents.models import Invitation
from apps.core.api.serializers import InvisibleCharacter, normalize_label
from apps.core.ratelimit import Budget

# Checks of an existing account's password through one invitation (keyed by the invitation, so a
# new client address buys no more): stricter than the console sign-in's ceiling per e-mail.
CONFIRM_ATTEMPTS = Budget("invite_confirm", 10, 900)
TOO_MANY_ATTEMPTS = gettext_lazy("Too many password attempts. Try again in %(minutes)s min.")

UNUSABLE = {
    "missing": (
        404,
        gettext_lazy("This link does not work"),
        gettext_lazy("There is no such invitation. Check that the whole link was copied."),
    ),
    "expired": (
        410,
        gettext_lazy("The invitation has expired"),
        gettext_lazy("An invitation is valid for 7 days, and this one no longer is."),
    ),
    "accepted": (
        410,
        gettext_lazy("The invitation has already been used"),
        gettext_lazy("This invitation was accepted already; its link opens only once."),
    ),
    "revoked": (
        410,
        gettext_lazy("The invitation was revoked"),
        gettext_lazy("The widget's owner revoked this invitation."),
    ),
}


class _NameFields(forms.Form):
    """The operator's name as visitors will read it: NFC, no invisible or bidirectional-control
    characters (the rule of apps.core.api.serializers.normalize_label)."""

    name = forms.CharField(label=gettext_lazy("Name"), max_length=150)
    surname = forms.CharField(label=gettext_lazy("Surname"), max_length=150, required=False)

    def _label(self, field: str) -> str:
        try:
            return normalize_label(self.cleaned_data[field])
        except InvisibleCharacter as exc:
            raise forms.ValidationError(
                _("Remove the invisible and text-direction control characters (%(code_point)s).")
                % {"code_point": exc.code_point}
            ) from None

    def clean_name(self) -> str:
        return self._label("name")

    def clean_surname(self) -> str:
        return self._label("surname")


class NewOperatorForm(_NameFields):
    password1 = forms.CharField(
        label=gettext_lazy("Password"), strip=False, widget=forms.PasswordInput(attrs={"autocomplete": "new-password"})
    )
    password2 = forms.CharField(
        label=gettext_lazy("Password again"),
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
    )

    def __init__(self, *args, invitation: Invitation, **kwargs):
        super().__init__(*args, **kwargs)
        self.invitation = invitation

    def clean(self):
        data = super().clean()
        first, second = data.get("password1"), data.get("password2")
        if first and second:
            if first != second:
                self.add_error("password2", _("The passwords do not match."))
            else:
                probe = get_user_model()(username=self.invitation.email, email=self.invitation.email)
                try:
                    password_validation.validate_password(first, user=probe)
                except forms.ValidationError as exc:
                    self.add_error("password1", exc)
        return data


class ExistingUserForm(_NameFields):
    password = forms.CharField(
        label=gettext_lazy("Your current password"),
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "current-password"}),
    )

    def __init__(self, *args, user, **kwargs):
        super().__init__(*args, **kwargs)
        self.user = user

    def clean_password(self):
        password = self.cleaned_data["password"]
        if not self.user.check_password(password):
            raise forms.ValidationError(_("Wrong password."))
        return password


def _unusable(request, state: str):
    status, headline, message = UNUSABLE[state]
    return render(request, "console/invite/unusable.html", {"headline": headline, "message": message}, status=status)


def _no_store(response):
    response["Cache-Control"] = "no-store"
    response["Referrer-Policy"] = "strict-origin"
    return response


@never_cache
@csrf_protect
@require_http_methods(["GET", "POST"])
def accept_invitation_page(request, token: str):
    invitation = selectors.find_invitation(services.hash_token(token))
    if invitation is None:
        return _no_store(_unusable(request, "missing"))
    state = invitation.state()
    if state != "pending":
        return _no_store(_unusable(request, state))
    existing = services.existing_user_for(invitation)
    if request.method == "POST":
        form = (
            ExistingUserForm(request.POST, user=existing)
            if existing
            else NewOperatorForm(request.POST, invitation=invitation)
        )
        limited = CONFIRM_ATTEMPTS.consume(invitation.pk) if existing else None
        if limited is not None and not limited.allowed:  # refused before the password is checked
            wait = max(1, math.ceil(limited.retry_after))
            context = {
                "form": ExistingUserForm(user=existing),
                "invitation": invitation,
                "widget": invitation.widget,
                "existing_user": True,
                "error": TOO_MANY_ATTEMPTS % {"minutes": math.ceil(wait / 60)},
            }
            response = render(request, "console/invite/accept.html", context, status=429)
            response["Retry-After"] = str(wait)
            return _no_store(response)
        if form.is_valid():
            try:
                agent = services.accept_invitation(
                    token=token,
                    name=form.cleaned_data["name"].strip(),
                    surname=form.cleaned_data["surname"].strip(),
                    password=None if existing else form.cleaned_data["password1"],
                )
            except services.InvitationUnusable as exc:
                return _no_store(_unusable(request, exc.state))
            except services.SeatLimitReached:
                response = render(
                    request,
                    "console/invite/unusable.html",
                    {
                        "headline": _("No free operator seat"),
                        "message": _(
                            "Every paid operator seat is taken. The invitation stays valid until it expires: "
                            "try again once the owner frees a seat."
                        ),
                    },
                    status=409,
                )
                return _no_store(response)
            done = render(request, "console/invite/done.html", {"agent": agent, "widget": invitation.widget})
            return _no_store(done)
    else:
        form = ExistingUserForm(user=existing) if existing else NewOperatorForm(invitation=invitation)
    context = {"form": form, "invitation": invitation, "widget": invitation.widget, "existing_user": bool(existing)}
    return _no_store(render(request, "console/invite/accept.html", context))
