"""The knowledge base page's forms: they draw and parse the HTML inputs only. Every rule and message
is the API's (apps.kb.api.serializers through apps.console.settings.forms): `*_data` turns a form's
posted values into the body the API route takes."""

from __future__ import annotations

from django import forms
from django.utils.translation import gettext_lazy as _

SCHEDULES = (("manual", _("Only when I start it")), ("daily", _("Every day")), ("weekly", _("Every week")))


def _lines(value: str) -> list[str]:
    return [line.strip() for line in (value or "").splitlines() if line.strip()]


def _number(value: str):
    """An integer when the text is one (the API's integer members are strict: a string is refused
    with the API's own message, so anything else is passed on as written)."""
    value = (value or "").strip()
    try:
        return int(value)
    except ValueError:
        return value


class UploadForm(forms.Form):
    file = forms.FileField(
        label=_("Document"),
        required=False,  # the API's words refuse a missing file
        help_text=_("txt, md, html, csv, json, pdf, docx or odt; at most 10 MB."),
        widget=forms.ClearableFileInput(attrs={"accept": ".txt,.md,.markdown,.html,.htm,.csv,.json,.pdf,.docx,.odt"}),
    )


class CrawlForm(forms.Form):
    start_urls = forms.CharField(
        label=_("Start addresses"),
        help_text=_("One https address a line, up to 10. The crawl stays on their sites."),
        widget=forms.Textarea(attrs={"rows": 3, "dir": "ltr", "spellcheck": "false"}),
        required=False,
    )
    include = forms.CharField(
        label=_("Only pages matching"),
        help_text=_("Optional. One pattern a line over the address’s path, starting with / or *, e.g. /help/*."),
        widget=forms.Textarea(attrs={"rows": 2, "dir": "ltr", "spellcheck": "false"}),
        required=False,
    )
    exclude = forms.CharField(
        label=_("Never pages matching"),
        help_text=_("Optional. One pattern a line, e.g. /cart*."),
        widget=forms.Textarea(attrs={"rows": 2, "dir": "ltr", "spellcheck": "false"}),
        required=False,
    )
    max_pages = forms.CharField(
        label=_("Most pages"),
        help_text=_("1 to 1000 (100 when empty)."),
        widget=forms.NumberInput(attrs={"min": 1, "max": 1000}),
        required=False,
    )
    max_depth = forms.CharField(
        label=_("Links deep"),
        help_text=_("0 to 5 (3 when empty): how many links away from a start address."),
        widget=forms.NumberInput(attrs={"min": 0, "max": 5}),
        required=False,
    )
    schedule = forms.ChoiceField(label=_("Crawl again"), choices=SCHEDULES, required=False)
    cancel_running = forms.BooleanField(label=_("Cancel a crawl that is running now"), required=False)

    def api_data(self) -> dict:
        """The body of PUT /v1/kb/crawler for the posted values (empty numbers take the defaults)."""
        raw = self.data
        body: dict = {
            "start_urls": _lines(raw.get("start_urls", "")),
            "include": _lines(raw.get("include", "")),
            "exclude": _lines(raw.get("exclude", "")),
        }
        for name in ("max_pages", "max_depth"):
            if (raw.get(name) or "").strip():
                body[name] = _number(raw.get(name))
        if raw.get("schedule"):
            body["schedule"] = raw.get("schedule")
        return body

    @classmethod
    def initial_from(cls, config: dict | None) -> dict:
        if not config:
            return {"schedule": "manual"}
        return {
            "start_urls": "\n".join(config["start_urls"]),
            "include": "\n".join(config["include"]),
            "exclude": "\n".join(config["exclude"]),
            "max_pages": config["max_pages"],
            "max_depth": config["max_depth"],
            "schedule": config["schedule"],
        }


class RuleForm(forms.Form):
    content = forms.CharField(
        label=_("Rule"),
        help_text=_("One fact in your own words, up to 4000 characters."),
        widget=forms.Textarea(attrs={"rows": 3}),
        required=False,
        strip=False,
    )
    doc_id = forms.CharField(
        label=_("Label"),
        help_text=_("Optional: your own name for where the fact comes from, up to 200 characters."),
        required=False,
    )

    def api_data(self, *, partial: bool) -> dict:
        """The body of POST (or PATCH) /v1/kb/rules: an empty label is none."""
        body: dict = {"content": self.data.get("content", "")}
        label = (self.data.get("doc_id") or "").strip()
        if label:
            body["doc_id"] = label
        elif partial:
            body["doc_id"] = None
        return body


class SearchForm(forms.Form):
    q = forms.CharField(
        label=_("A visitor’s question"),
        widget=forms.TextInput(attrs={"type": "search", "autocomplete": "off"}),
        required=False,
    )
    # The API's own rules (1..20) judge the value: the form only draws the usual choices.
    limit = forms.CharField(
        label=_("Chunks"), widget=forms.Select(choices=[(str(n), str(n)) for n in (3, 5, 10, 20)]), required=False
    )
