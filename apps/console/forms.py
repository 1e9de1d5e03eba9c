"""The console's forms: every input is validated here before a service sees it."""

from __future__ import annotations

import unicodedata

from django import forms
from django.conf import settings
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from apps.agents.models import Agent
from apps.chats import services as chat_services
from apps.chats.models import Chat
from apps.core.errors import ValidationFailed
from apps.core.timeparse import EARLIEST_DAY, LATEST_DAY
from apps.platform.numbers import MAX_ID

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

    # The reports' drill-down (query parameters `from`, `to`, `agent_id`, `rating`, `handling`).
    date_from = forms.DateField(
        label=_("From"),
        required=False,
        input_formats=["%Y-%m-%d"],
        error_messages={"invalid": _("Write a date as YYYY-MM-DD.")},
    )
    date_to = forms.DateField(
        label=_("To"),
        required=False,
        input_formats=["%Y-%m-%d"],
        error_messages={"invalid": _("Write a date as YYYY-MM-DD.")},
    )
    agent_id = forms.IntegerField(
        label=_("Operator"),
        required=False,
        min_value=1,
        max_value=MAX_ID,
        error_messages={
            "invalid": _("An operator is named by their number."),
            "min_value": _("An operator is named by their number."),
            "max_value": _("An operator is named by their number."),
        },
    )
    rating = forms.TypedChoiceField(
        label=_("Rating"),
        required=False,
        coerce=int,
        empty_value=None,
        choices=[(str(v), str(v)) for v in range(1, 6)],
        error_messages={"invalid_choice": _("A rating is a number from 1 to 5.")},
    )
    handling = forms.ChoiceField(
        label=_("Handling"),
        required=False,
        choices=[
            ("ai", _("AI")),
            ("human", _("Human")),
            ("ai_to_human", _("AI to human")),
            ("human_to_ai", _("Human to AI")),
            ("missed", _("Missed")),
        ],
        error_messages={"invalid_choice": _("Unknown handling.")},
    )

    label = forms.MultipleChoiceField(
        label=_("Label"),
        required=False,
        error_messages={"invalid_choice": _("This widget has no label named “%(value)s”.")},
    )

    def __init__(self, data=None, *, labels=(), **kwargs):
        # An unbound form shows the defaults as chosen (the view "All", open chats).
        kwargs.setdefault("initial", {"view": selectors.VIEW_ALL, "status": Chat.Status.ACTIVE})
        if data is not None:
            data = data.copy()
            for attribute, param in selectors.PARAM_NAMES.items():
                if param in data:
                    data[attribute] = data[param]
        super().__init__(data, **kwargs)
        # `labels`: the widget's labels, the filter's choices (by name, as the list's URL spells them).
        self.fields["label"].choices = [(label.name, label.name) for label in labels]

    def _clean_day(self, name: str):
        day = self.cleaned_data.get(name)
        if day is not None and not EARLIEST_DAY <= day < LATEST_DAY:
            raise forms.ValidationError(
                _("Choose a date from %(first)s to %(last)s.")
                % {
                    "first": EARLIEST_DAY.isoformat(),
                    "last": LATEST_DAY.isoformat(),
                }
            )
        return day

    def clean_date_from(self):
        return self._clean_day("date_from")

    def clean_date_to(self):
        return self._clean_day("date_to")

    def clean(self):
        cleaned = super().clean()
        start, end = cleaned.get("date_from"), cleaned.get("date_to")
        if start is not None and end is not None and end < start:
            self.add_error("date_to", _("The end date must not be before the start date."))
        return cleaned

    def filters(self) -> ChatFilters:
        """The valid filters; an invalid one is left out (its error is shown), a missing one is
        its default."""
        if not self.is_bound:
            return ChatFilters()
        self.is_valid()
        defaults = ChatFilters()
        names = ("view", "status", "channel", "q", "date_from", "date_to", "agent_id", "rating", "handling")
        data = {name: self.cleaned_data.get(name) or getattr(defaults, name) for name in names}
        data["q"] = data["q"].strip()
        data["label"] = tuple(self.cleaned_data.get("label") or ())
        return ChatFilters(**data)


class LanguageForm(forms.Form):
    """The console's language switcher: one of settings.LANGUAGES."""

    language = forms.ChoiceField(choices=settings.LANGUAGES, error_messages={"invalid_choice": _("Unknown language.")})


# --- the context panel's contact forms ------------------------------------------------------------------
# Their fields carry no rules of their own: what they collect is read by apps.chats.services with the
# rules and messages of PATCH /v1/contacts/{id} and POST /v1/contacts/{id}/tags.


class _ContactChangeForm(forms.Form):
    """A subclass's `api_changes()` turns its cleaned data into the API's members, which `check`
    reads by the API's rules; `changes` holds the result for the service."""

    # The API's field paths and the form field that shows their messages.
    api_fields: dict[str, str] = {}

    def __init__(self, *args, contact, **kwargs):
        super().__init__(*args, **kwargs)
        self.contact = contact
        self.changes: dict = {}

    def clean(self):
        data = super().clean()
        if not self.errors:
            changes = self.api_changes()
            if changes:
                try:
                    self.changes = self.check(changes)
                except ValidationFailed as err:
                    self.add_api_errors(err)
        return data

    def check(self, changes: dict) -> dict:
        return chat_services.check_contact_changes(changes)

    def add_api_errors(self, err: ValidationFailed) -> None:
        """The refusal's messages next to the fields they name (nothing else on the page names
        the API's paths); what names no field of the form is the form's own error."""
        for path, messages in (err.errors or {"": [err.detail]}).items():
            head, _dot, item = path.partition(".")
            field = self.api_fields.get(head)
            for message in messages:
                text = f"{self.item_label(item)}: {message}" if item else message
                self.add_error(field if field in self.fields else None, text)

    def item_label(self, item: str) -> str:
        return item


class ContactForm(_ContactChangeForm):
    """Name, e-mail and phone. Only the members that differ from the stored ones are sent, so a
    stored value the operator did not touch is never read again by today's rules."""

    name = forms.CharField(label=_("Name"), required=False, strip=False)
    email = forms.CharField(label=_("E-mail"), required=False, strip=False)
    phone = forms.CharField(label=_("Phone"), required=False, strip=False)
    api_fields = {"name": "name", "email": "email", "phone": "phone"}

    def __init__(self, *args, contact, **kwargs):
        kwargs.setdefault("initial", {"name": contact.name, "email": contact.email, "phone": contact.phone})
        kwargs.setdefault("auto_id", "contact_%s")
        super().__init__(*args, contact=contact, **kwargs)

    def api_changes(self) -> dict:
        return {
            field: self.cleaned_data[field]
            for field in ("name", "email", "phone")
            if field in self.data and self.cleaned_data[field] != getattr(self.contact, field)
        }


class AttributeForm(_ContactChangeForm):
    """One custom attribute added or changed (a string value)."""

    key = forms.CharField(
        label=_("Attribute"), strip=False, error_messages={"required": _("Name the attribute to set.")}
    )
    value = forms.CharField(label=_("Value"), required=False, strip=False)
    api_fields = {"attributes": "value"}

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("auto_id", "attribute_%s")
        super().__init__(*args, **kwargs)

    def api_changes(self) -> dict:
        return {"attributes": {self.cleaned_data["key"].strip(): self.cleaned_data["value"]}}


class RemoveAttributeForm(_ContactChangeForm):
    """One custom attribute removed (the API's `{"key": null}`); an absent key changes nothing."""

    key = forms.CharField(strip=False)
    api_fields = {"attributes": "key"}

    def api_changes(self) -> dict:
        return {"attributes": {self.cleaned_data["key"]: None}}


TAG_LABEL_CHARS = 24  # a refused tag's text leading its message, cut to this


class TagsForm(_ContactChangeForm):
    """Tags to attach, separated by commas."""

    tags = forms.CharField(label=_("Add tags"), required=False, strip=False, help_text=_("Separate tags with commas."))
    api_fields = {"tags": "tags"}

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("auto_id", "tags_%s")
        super().__init__(*args, **kwargs)
        self.names: list[str] = []

    def api_changes(self) -> dict:
        # The spaces around a comma separate names: they are not part of them.
        self.names = [part.strip() for part in self.cleaned_data["tags"].split(",") if part.strip()]
        return {"tags": self.names}

    def check(self, changes: dict) -> dict:
        return {"tags": chat_services.check_tag_names(changes["tags"])}

    def item_label(self, item: str) -> str:
        """`tags.3` names the fourth tag typed: its text leads its message."""
        index = int(item) if item.isdigit() else -1
        if not 0 <= index < len(self.names):
            return item
        name = self.names[index]
        return f"«{name if len(name) <= TAG_LABEL_CHARS else name[: TAG_LABEL_CHARS - 1] + '…'}»"


class SaveViewForm(FilterForm):
    """The list's filters (as FilterForm reads them) and the name to keep them under."""

    name = forms.CharField(
        label=_("Name of the view"),
        max_length=40,
        error_messages={
            "required": _("Give the view a name."),
            "max_length": _("Keep the name to %(limit_value)d characters."),
        },
    )

    def clean_name(self) -> str:
        name = unicodedata.normalize("NFC", self.cleaned_data["name"]).strip()
        if not name:
            raise forms.ValidationError(_("Give the view a name."))
        return name
