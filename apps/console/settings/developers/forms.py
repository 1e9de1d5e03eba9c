"""The Django forms the developers pages draw and parse. A webhook form's values are checked by the
API's own serializer and service (`settings.forms.submit`); the token form's rules are those of
`apps.core.services.issue_token` (tokens have no API route: issuing them is the cabinet's job)."""

from __future__ import annotations

from django import forms
from django.utils.translation import gettext_lazy as _

from apps.core.auth import scopes as catalogue
from apps.webhooks import services as webhooks

ALL = "all"
# The named scope sets `manage.py issue_token` and Django admin know, and `all` (every operational scope).
PRESETS = (ALL, *sorted(catalogue.PRESETS))
MAX_EXPIRY_DAYS = 3650


def preset_scopes(preset: str) -> list[str]:
    if preset == ALL:
        return sorted(catalogue.OPERATIONAL_SCOPES)
    return list(catalogue.PRESETS[preset])


def scope_groups() -> list[tuple[str, list[tuple[str, str, bool]]]]:
    """The grantable scopes grouped by resource (`chats:read` under `chats`): (scope, what it grants,
    sensitive), the reserved ones left out (no route accepts them)."""
    groups: dict[str, list[tuple[str, str, bool]]] = {}
    for scope in sorted(catalogue.OPERATIONAL_SCOPES):
        grants, sensitive = catalogue.CATALOGUE[scope]
        groups.setdefault(scope.split(":", 1)[0], []).append((scope, grants, sensitive))
    return sorted(groups.items())


class ApiSwitchForm(forms.Form):
    api_enabled = forms.BooleanField(
        label=_("Allow API access with tokens"),
        required=False,
        help_text=_("Off: every token of this widget is refused, whatever its scopes."),
    )


class TokenForm(forms.Form):
    name = forms.CharField(
        label=_("Name"),
        max_length=100,
        required=False,
        help_text=_("What the token is for, so you recognise it in the list."),
    )
    preset = forms.ChoiceField(
        label=_("Scope set"),
        required=False,
        choices=[("", _("The scopes I tick below")), (ALL, _("All scopes"))]
        + [(name, name) for name in sorted(catalogue.PRESETS)],
        help_text=_("A set replaces the ticked scopes."),
    )
    scopes = forms.MultipleChoiceField(
        label=_("Scopes"),
        required=False,
        choices=[(s, s) for s in sorted(catalogue.OPERATIONAL_SCOPES)],
        widget=forms.CheckboxSelectMultiple,
    )
    expires_in_days = forms.IntegerField(
        label=_("Expires after (days)"),
        required=False,
        min_value=1,
        max_value=MAX_EXPIRY_DAYS,
        help_text=_("Empty: the token never expires."),
    )

    def clean(self):
        data = super().clean()
        chosen = preset_scopes(data["preset"]) if data.get("preset") else data.get("scopes") or []
        if not chosen and not self.errors:
            raise forms.ValidationError(_("Choose a scope set or at least one scope."))
        data["chosen_scopes"] = chosen
        return data


def event_choices(*, legacy: bool) -> list[tuple[str, str]]:
    names = webhooks.event_names(legacy=legacy)
    return [(name, name) for name in names]


class PostedNames(forms.MultipleChoiceField):
    """Draws the choices, takes what is posted: the API's serializer judges the names, in its words."""

    def valid_value(self, value) -> bool:
        return True


class SubscriptionForm(forms.Form):
    """Drawn only: the API's serializer and service check what is posted."""

    url = forms.CharField(
        label=_("Receiver URL"),
        required=False,
        widget=forms.URLInput(attrs={"dir": "ltr", "placeholder": "https://"}),
        help_text=_("An https address on the internet that answers our POST requests."),
    )
    events = PostedNames(label=_("Events"), required=False, widget=forms.CheckboxSelectMultiple)
    is_legacy_compat = forms.BooleanField(
        label=_("Legacy format (the five legacy event names and body)"), required=False
    )
    is_active = forms.BooleanField(label=_("Active"), required=False)
    secret = forms.CharField(
        label=_("Signing secret"),
        required=False,
        widget=forms.TextInput(attrs={"dir": "ltr", "autocomplete": "off"}),
        help_text=_("16 to 256 characters; leave it empty to have one made for you."),
    )

    def __init__(self, *args, editing: bool = False, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["events"].choices = event_choices(legacy=False) + event_choices(legacy=True)
        if editing:
            del self.fields["secret"]
        else:
            del self.fields["is_active"]


def subscription_data(post, *, editing: bool) -> dict:
    """The body the API would take, from the posted form: every member on an edit (a whole PATCH)."""
    data = {
        "url": post.get("url", ""),
        "events": post.getlist("events"),
        "is_legacy_compat": post.get("is_legacy_compat") == "on",
    }
    if editing:
        data["is_active"] = post.get("is_active") == "on"
    elif post.get("secret"):
        data["secret"] = post["secret"]
    return data
