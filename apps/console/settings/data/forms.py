"""The data pages' forms: they draw and parse the HTML inputs; the rules and messages of what they
collect are the API routes' (apps.chats.api.serializers.ContactListQuery, apps.privacy.api.serializers)."""

from __future__ import annotations

from django import forms
from django.utils.translation import gettext_lazy as _

from apps.audit.models import AuditEntry

ACTOR_TYPES = {
    AuditEntry.ActorType.AGENT: _("A person in the console"),
    AuditEntry.ActorType.TOKEN: _("An API token"),
    AuditEntry.ActorType.STAFF: _("Staff in the administration"),
    AuditEntry.ActorType.SYSTEM: _("The system"),
}


class SearchForm(forms.Form):
    query = forms.CharField(
        label=_("Search contacts"),
        required=False,
        strip=False,
        help_text=_("A part of the name, e-mail or phone."),
        widget=forms.TextInput(attrs={"type": "search", "dir": "auto", "autocomplete": "off"}),
    )


class RetentionForm(forms.Form):
    """`keep` chooses between keeping chats for good and a number of days (the API's null or days)."""

    keep = forms.ChoiceField(
        label=_("Keep chats"),
        choices=[("forever", _("For good, until you erase them")), ("days", _("For a number of days"))],
        widget=forms.RadioSelect,
    )
    chats_days = forms.CharField(
        label=_("Days after a chat's last message"),
        required=False,
        help_text=_("From 30 to 3650 days (about ten years)."),
        widget=forms.TextInput(attrs={"inputmode": "numeric", "dir": "ltr", "size": 6}),
    )

    def api_data(self) -> dict:
        """The body of PUT /v1/widget/retention this form stands for: a number the owner typed is
        sent as an integer, anything else as typed (the API's serializer words the refusal)."""
        if self.cleaned_data.get("keep") != "days":
            return {"chats_days": None}
        raw = (self.cleaned_data.get("chats_days") or "").strip()
        return {"chats_days": int(raw) if raw.isdigit() and len(raw) < 10 else raw}


class AuditFilterForm(forms.Form):
    """The audit log's filters: who acted, on what kind of object, and the days (the API's `from`
    and `to`, read by its own rules)."""

    actor = forms.ChoiceField(label=_("Who"), required=False)
    target = forms.ChoiceField(label=_("On what"), required=False)
    start = forms.CharField(
        label=_("From"), required=False, widget=forms.DateInput(attrs={"type": "date", "dir": "ltr"})
    )
    end = forms.CharField(
        label=_("Until"),
        required=False,
        help_text=_("Up to the start of this day."),
        widget=forms.DateInput(attrs={"type": "date", "dir": "ltr"}),
    )

    def __init__(self, *args, target_types: list[str], **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["actor"].choices = [("", _("Anyone")), *ACTOR_TYPES.items()]
        self.fields["target"].choices = [("", _("Anything")), *[(t, t) for t in target_types]]
        self.fields["actor"].error_messages["invalid_choice"] = _("Choose one of the listed kinds.")
        self.fields["target"].error_messages["invalid_choice"] = _("Choose one of the listed kinds.")

    def api_query(self) -> dict:
        """The API's `from` and `to` members as typed, for AuditLogQuery."""
        data = {}
        if self.cleaned_data.get("start"):
            data["from"] = self.cleaned_data["start"]
        if self.cleaned_data.get("end"):
            data["to"] = self.cleaned_data["end"]
        return data
