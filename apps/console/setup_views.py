"""/setup/: the first-run page (apps.console.setup). GET shows the form, POST creates the owner's
account, widget and console sign-in, signs the owner in and shows the embed snippet. Without the
right code, and once any account exists, both answer 404.

The values follow the API's rules and messages: the e-mail as every API e-mail member
(StrictEmailField), names as every API name (LabelField), the password by Django's validators
(AUTH_PASSWORD_VALIDATORS, as the invitation page), the widget's name as the `widget_name` setting.
"""

from __future__ import annotations

from django import forms
from django.contrib.auth import get_user_model, password_validation
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import Http404
from django.shortcuts import render
from django.urls import reverse
from django.utils.translation import gettext_lazy as _
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods
from rest_framework import serializers

from apps.core.api.serializers import InputSerializer, LabelField, StrictCharField, StrictEmailField
from apps.widget import selectors as widget_selectors

from . import services as console_services
from . import setup
from .settings import forms as settings_forms

WIDGET_NAME_MAX = 60  # the `widget_name` setting's limit (the chat window's title)
PASSWORD_MAX = 128


class SetupInput(InputSerializer):
    name = LabelField(max_length=150)
    email = StrictEmailField(max_length=254)
    password = StrictCharField(max_length=PASSWORD_MAX, trim_whitespace=False)
    password2 = StrictCharField(max_length=PASSWORD_MAX, trim_whitespace=False)
    widget_name = LabelField(max_length=WIDGET_NAME_MAX)

    def validate_email(self, value: str) -> str:
        return value.strip().lower()

    def validate(self, attrs):
        if attrs["password"] != attrs["password2"]:
            raise serializers.ValidationError({"password2": ["The two passwords differ."]})
        probe = get_user_model()(username=attrs["email"], email=attrs["email"], first_name=attrs["name"])
        try:
            password_validation.validate_password(attrs["password"], user=probe)
        except DjangoValidationError as err:
            raise serializers.ValidationError({"password": list(err.messages)}) from None
        return attrs


class SetupForm(forms.Form):
    """Draws and parses the inputs; SetupInput decides."""

    name = forms.CharField(label=_("Your name"), max_length=150, widget=forms.TextInput(attrs={"autocomplete": "name"}))
    email = forms.CharField(
        label=_("Your e-mail"),
        max_length=254,
        help_text=_("You sign in to the console with it."),
        widget=forms.EmailInput(attrs={"autocomplete": "email", "dir": "ltr"}),
    )
    password = forms.CharField(
        label=_("Password"),
        strip=False,
        max_length=PASSWORD_MAX,
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
        help_text=_("At least 8 characters; not a common password, not only digits, not like your name or e-mail."),
    )
    password2 = forms.CharField(
        label=_("Password again"),
        strip=False,
        max_length=PASSWORD_MAX,
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
    )
    widget_name = forms.CharField(
        label=_("Widget name"),
        max_length=WIDGET_NAME_MAX,
        help_text=_("The title of the chat window on your site; you can change it later."),
    )


def _values(post) -> dict:
    return {name: post.get(name, "") for name in SetupForm.base_fields}


def _code(request) -> str:
    return (request.GET.get("code") or "")[:100]


@never_cache
@require_http_methods(["GET", "POST"])
def setup_page(request):
    code = _code(request)
    if not setup.code_matches(code):
        raise Http404("No first run here.")
    if request.method == "GET":
        return render(request, "console/setup.html", {"form": SetupForm(), "code": code})
    form = SetupForm(request.POST)
    validated, refused = settings_forms.validate(SetupInput, _values(request.POST))
    if refused is None:
        values = {key: validated[key] for key in ("name", "email", "password", "widget_name")}
        outcome = settings_forms.perform(lambda: setup.complete_setup(code=code, **values))
        if not outcome.refused:
            return _done(request, outcome.value)
        if outcome.status == 404:
            raise Http404("No first run here.")
        refused = outcome
    settings_forms.bind(form, refused)
    return render(request, "console/setup.html", {"form": form, "code": code}, status=refused.status)


def _done(request, owner):
    """The owner is signed in; the page the first run ends on (the POST's own answer: /setup/ is
    closed from now on, so there is nothing to redirect to under it)."""
    console_services.sign_in(request, owner.user)
    widget = owner.widget
    snippet = widget_selectors.embed_payload(widget, origin=f"{request.scheme}://{request.get_host()}")["snippet"]
    context = {
        "widget": widget,
        "snippet": snippet,
        "console_url": reverse("console:chats"),
        "settings_url": reverse("console:settings:index"),
        "demo_url": f"{reverse('widget-demo')}?guid={widget.button_guid}",
    }
    return render(request, "console/setup_done.html", context)
