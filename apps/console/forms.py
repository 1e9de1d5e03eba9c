"""The console's forms: every input is validated here before a service sees it."""

from __future__ import annotations

from django import forms
from django.conf import settings
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from apps.agents.models import Agent
from apps.chats.models import Chat

from . import selectors
from .selectors import ChatFilters

BODY_MAX = 65536  # as the REST API's message body
SEARCH_MAX = 200

# A chat's status as the console names it: the words operators use (open, closed) for the API's
# values (active, expired); the chat's header says what each means.
STATUS_LABELS = {
    Chat.Status.ACTIVE: pgettext_lazy("chat status", "open"),
    Chat.Status.READY: pgettext_lazy("chat status", "ready"),
    Chat.Status.EXPIRED: pgettext_lazy("chat status", "closed"),
    Chat.Status.SPAM: pgettext_lazy("chat status", "spam"),
}
# The status filter's choices (the list shows open chats unless another is chosen).
STATUS_FILTERS = {
    Chat.Status.ACTIVE: _("Open"),
    Chat.Status.EXPIRED: _("Closed"),
    Chat.Status.READY: _("Ready"),
    Chat.Status.SPAM: _("Spam"),
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
        widget=forms.Textarea(attrs={"rows": 3, "dir": "auto", "placeholder": _("Write a reply…")}),
    )


class NoteForm(_TextForm):
    body = forms.CharField(
        label=_("Private note"),
        max_length=BODY_MAX,
        strip=False,
        error_messages=TEXT_ERRORS,
        widget=forms.Textarea(attrs={"rows": 3, "dir": "auto", "placeholder": _("Write a note for the team…")}),
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
    """The list's view (a tab) and its filters. The views count and list open chats; the status
    filter shows the others."""

    view = forms.ChoiceField(
        label=_("View"),
        required=False,
        choices=[
            (selectors.VIEW_MINE, _("Mine")),
            (selectors.VIEW_UNASSIGNED, _("Unassigned")),
            (selectors.VIEW_ALL, _("All")),
        ],
        widget=forms.RadioSelect,
    )
    status = forms.ChoiceField(
        label=_("Status"),
        required=False,
        choices=[*STATUS_FILTERS.items(), (selectors.ANY_STATUS, _("Any status"))],
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
        widget=forms.TextInput(attrs={"dir": "auto", "type": "search"}),
    )

    def __init__(self, data=None, **kwargs):
        # An unbound form shows the defaults as chosen (the view "All", open chats).
        kwargs.setdefault("initial", {"view": selectors.VIEW_ALL, "status": Chat.Status.ACTIVE})
        super().__init__(data, **kwargs)

    def filters(self) -> ChatFilters:
        """The valid filters; an invalid one is left out (its error is shown), a missing one is
        its default."""
        if not self.is_bound:
            return ChatFilters()
        self.is_valid()
        defaults = ChatFilters()
        names = ("view", "status", "channel", "q")
        data = {name: self.cleaned_data.get(name) or getattr(defaults, name) for name in names}
        data["q"] = data["q"].strip()
        return ChatFilters(**data)


class LanguageForm(forms.Form):
    """The console's language switcher: one of settings.LANGUAGES."""

    language = forms.ChoiceField(choices=settings.LANGUAGES, error_messages={"invalid_choice": _("Unknown language.")})
