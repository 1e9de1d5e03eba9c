"""The console's forms: every input is validated here before a service sees it."""

from __future__ import annotations

from django import forms
from django.conf import settings
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from apps.agents.models import Agent
from apps.chats.models import Chat

from .selectors import ChatFilters

BODY_MAX = 65536  # as the REST API's message body
SEARCH_MAX = 200

# A chat's status as the console names it (the API's values, translated; English keeps the values).
STATUS_LABELS = {
    Chat.Status.ACTIVE: pgettext_lazy("chat status", "active"),
    Chat.Status.READY: pgettext_lazy("chat status", "ready"),
    Chat.Status.EXPIRED: pgettext_lazy("chat status", "expired"),
    Chat.Status.SPAM: pgettext_lazy("chat status", "spam"),
}


class LoginForm(forms.Form):
    email = forms.EmailField(
        label=_("E-mail"),
        max_length=254,
        error_messages={"required": _("Enter your e-mail."), "invalid": _("Enter a valid email address.")},
        widget=forms.EmailInput(attrs={"autocomplete": "username", "dir": "ltr"}),
    )
    password = forms.CharField(
        label=_("Password"),
        max_length=4096,
        strip=False,
        error_messages={"required": _("Enter your password.")},
        widget=forms.PasswordInput(attrs={"autocomplete": "current-password"}),
    )


TEXT_ERRORS = {
    "required": _("Write something first."),
    "max_length": _("Keep it to %(limit_value)d characters (this has %(show_value)d)."),
}


class _TextForm(forms.Form):
    body = forms.CharField(
        max_length=BODY_MAX,
        strip=False,
        error_messages=TEXT_ERRORS,
        widget=forms.Textarea(attrs={"rows": 3, "dir": "auto"}),
    )

    def clean_body(self) -> str:
        body = self.cleaned_data["body"]
        if not body.strip():
            raise forms.ValidationError(_("Write something first."))
        return body


class ReplyForm(_TextForm):
    body = forms.CharField(
        label=_("Reply"),
        max_length=BODY_MAX,
        strip=False,
        error_messages=TEXT_ERRORS,
        widget=forms.Textarea(attrs={"rows": 3, "dir": "auto"}),
    )


class NoteForm(_TextForm):
    body = forms.CharField(
        label=_("Private note"),
        max_length=BODY_MAX,
        strip=False,
        error_messages=TEXT_ERRORS,
        widget=forms.Textarea(attrs={"rows": 2, "dir": "auto"}),
    )


class FileForm(forms.Form):
    """One file to send (an image is sent as an image message); its size is checked by the service's
    caller with the upload limit every upload route uses."""

    file = forms.FileField(
        label=_("Attach a file"),
        error_messages={
            "required": _("Choose a file first."),
            "empty": _("The file is empty."),
            "invalid": _("No file was sent. Check the form's encoding."),
        },
    )


class TransferForm(forms.Form):
    agent = forms.ModelChoiceField(
        label=_("Transfer to"),
        queryset=Agent.objects.none(),
        empty_label=_("Choose an agent"),
        error_messages={
            "required": _("Choose an agent first."),
            "invalid_choice": _("Choose an agent of this widget."),
        },
    )

    def __init__(self, *args, targets, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["agent"].queryset = targets


class TypingForm(forms.Form):
    state = forms.ChoiceField(choices=[("start", "start"), ("stop", "stop")])


class FilterForm(forms.Form):
    status = forms.ChoiceField(
        label=_("Status"), required=False, choices=[("", _("All statuses")), *STATUS_LABELS.items()]
    )
    assigned = forms.ChoiceField(
        label=_("Assigned"),
        required=False,
        choices=[("", _("Everyone's")), ("mine", _("Mine")), ("unassigned", _("Unassigned"))],
    )
    channel = forms.RegexField(
        label=_("Channel"),
        required=False,
        max_length=64,
        regex=r"^[A-Za-z0-9_-]+$",
        error_messages={
            "invalid": _("A channel code holds letters, digits, _ and - only."),
            "max_length": _("A channel code has at most %(limit_value)d characters."),
        },
    )
    q = forms.CharField(
        label=_("Search messages"),
        required=False,
        max_length=SEARCH_MAX,
        error_messages={"max_length": _("Search for at most %(limit_value)d characters.")},
        widget=forms.TextInput(attrs={"dir": "auto"}),
    )

    def filters(self) -> ChatFilters:
        """The valid filters; an invalid one is left out (its error is shown)."""
        self.is_valid()
        data = {name: self.cleaned_data.get(name) or "" for name in ("status", "assigned", "channel", "q")}
        data["q"] = data["q"].strip()
        return ChatFilters(**data)


class LanguageForm(forms.Form):
    """The console's language switcher: one of settings.LANGUAGES."""

    language = forms.ChoiceField(choices=settings.LANGUAGES, error_messages={"invalid_choice": _("Unknown language.")})
