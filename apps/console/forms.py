"""The console's forms: every input is validated here before a service sees it."""

from __future__ import annotations

from django import forms

from apps.agents.models import Agent
from apps.chats.models import Chat

from .selectors import ChatFilters

BODY_MAX = 65536  # as the REST API's message body
SEARCH_MAX = 200


class LoginForm(forms.Form):
    email = forms.EmailField(
        label="E-mail", max_length=254, widget=forms.EmailInput(attrs={"autocomplete": "username"})
    )
    password = forms.CharField(
        label="Password",
        max_length=4096,
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "current-password"}),
    )


class _TextForm(forms.Form):
    body = forms.CharField(max_length=BODY_MAX, strip=False, widget=forms.Textarea(attrs={"rows": 3}))

    def clean_body(self) -> str:
        body = self.cleaned_data["body"]
        if not body.strip():
            raise forms.ValidationError("Write something first.")
        return body


class ReplyForm(_TextForm):
    body = forms.CharField(label="Reply", max_length=BODY_MAX, strip=False, widget=forms.Textarea(attrs={"rows": 3}))


class NoteForm(_TextForm):
    body = forms.CharField(
        label="Private note", max_length=BODY_MAX, strip=False, widget=forms.Textarea(attrs={"rows": 2})
    )


class FileForm(forms.Form):
    """One file to send (an image is sent as an image message); its size is checked by the service's
    caller with the upload limit every upload route uses."""

    file = forms.FileField(label="Attach a file", error_messages={"required": "Choose a file first."})


class TransferForm(forms.Form):
    agent = forms.ModelChoiceField(
        label="Transfer to",
        queryset=Agent.objects.none(),
        empty_label="Choose an agent",
        error_messages={"invalid_choice": "Choose an agent of this widget."},
    )

    def __init__(self, *args, targets, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["agent"].queryset = targets


class TypingForm(forms.Form):
    state = forms.ChoiceField(choices=[("start", "start"), ("stop", "stop")])


class FilterForm(forms.Form):
    status = forms.ChoiceField(
        label="Status", required=False, choices=[("", "All statuses"), *[(s, s.title()) for s in Chat.Status.values]]
    )
    assigned = forms.ChoiceField(
        label="Assigned",
        required=False,
        choices=[("", "Everyone's"), ("mine", "Mine"), ("unassigned", "Unassigned")],
    )
    channel = forms.RegexField(
        label="Channel",
        required=False,
        max_length=64,
        regex=r"^[A-Za-z0-9_-]+$",
        error_messages={"invalid": "A channel code holds letters, digits, _ and - only."},
    )
    q = forms.CharField(label="Search messages", required=False, max_length=SEARCH_MAX)

    def filters(self) -> ChatFilters:
        """The valid filters; an invalid one is left out (its error is shown)."""
        self.is_valid()
        data = {name: self.cleaned_data.get(name) or "" for name in ("status", "assigned", "channel", "q")}
        data["q"] = data["q"].strip()
        return ChatFilters(**data)
