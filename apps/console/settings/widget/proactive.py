"""/console/settings/widget/proactive/: the widget's proactive messages (what the widget says first, by
rules evaluated in the visitor's page). List with the last 30 days' figures, create, edit, enable or
disable, delete (after a confirmation), over apps.proactive.services with the API's serializers: the
same refusals (409 `name_taken`, 422 at the API's member paths) in the API's words, and audit rows with
the owner as actor (the services write them)."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.http import Http404, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from apps.agents.models import Agent
from apps.proactive import selectors, services
from apps.proactive.api import serializers as s
from apps.proactive.models import LANGUAGES, ProactiveMessage

from ... import views as console_views
from .. import forms as settings_forms
from ..access import owner_required
from ..views import settings_context

LANGUAGE_NAMES = {
    "en": "English",
    "ar": "العربية",
    "de": "Deutsch",
    "el": "Ελληνικά",
    "es": "Español",
    "ru": "Русский",
    "zh": "中文",
}
ORDER = ("en", *[code for code in LANGUAGES if code != "en"])
# A new message's form starts from the API's defaults.
NEW_VALUES = {
    "enabled": True,
    "frequency": "once",
    "priority": "0",
    "time_on_page_seconds": "0",
    "visits_at_least": "1",
}
RULE_FIELDS = ("url_patterns", "time_on_page_seconds", "visits_at_least", "attributes", "only_when_open")


class ProactiveForm(forms.Form):
    """Draws and parses a proactive message's inputs; the API's ProactiveMessageInput decides."""

    name = forms.CharField(
        label=gettext_lazy("Name"),
        help_text=gettext_lazy("Unique in the widget; your site's code can show the message by this name."),
    )
    enabled = forms.BooleanField(label=gettext_lazy("Enabled"), required=False)
    agent = forms.ChoiceField(label=gettext_lazy("Sender"), required=False, choices=())
    url_patterns = forms.CharField(
        label=gettext_lazy("Pages"),
        required=False,
        strip=False,
        help_text=gettext_lazy(
            "One address per line; * stands for any characters, as in https://example.com/pricing*. Empty: every page."
        ),
        widget=forms.Textarea(attrs={"rows": 3, "dir": "ltr", "spellcheck": "false"}),
    )
    time_on_page_seconds = forms.CharField(
        label=gettext_lazy("Seconds on the page"),
        required=False,
        widget=forms.TextInput(attrs={"inputmode": "numeric", "dir": "ltr"}),
    )
    visits_at_least = forms.CharField(
        label=gettext_lazy("At least this many visits"),
        required=False,
        help_text=gettext_lazy("The current visit counts: 1 shows it on the first visit."),
        widget=forms.TextInput(attrs={"inputmode": "numeric", "dir": "ltr"}),
    )
    attributes = forms.CharField(
        label=gettext_lazy("Visitor attributes"),
        required=False,
        strip=False,
        help_text=gettext_lazy("One key=value per line, as your site sets them; every one must match."),
        widget=forms.Textarea(attrs={"rows": 2, "dir": "ltr", "spellcheck": "false"}),
    )
    only_when_open = forms.BooleanField(label=gettext_lazy("Only during business hours"), required=False)
    frequency = forms.ChoiceField(label=gettext_lazy("How often"), choices=())
    priority = forms.CharField(
        label=gettext_lazy("Priority"),
        help_text=gettext_lazy("When several messages match, the largest number shows."),
        widget=forms.TextInput(attrs={"inputmode": "numeric", "dir": "ltr"}),
    )

    def __init__(self, *args, widget=None, **kwargs):
        super().__init__(*args, **kwargs)
        agents = Agent.objects.filter(widget=widget).exclude(status=Agent.Status.BANNED).order_by("name", "id")
        self.fields["agent"].choices = [("", _("The widget's name")), *[(str(a.pk), a.name) for a in agents]]
        self.fields["frequency"].choices = [
            ("once", _("Once per visitor")),
            ("once_per_session", _("Once per browser session")),
            ("always", _("On every page that matches")),
        ]
        for code in ORDER:
            self.fields[f"text_{code}"] = forms.CharField(
                label=_("Text in %(language)s") % {"language": LANGUAGE_NAMES[code]},
                required=False,
                strip=False,
                widget=forms.Textarea(attrs={"rows": 2, "lang": code, "dir": "rtl" if code == "ar" else "auto"}),
            )

    def text_fields(self):
        return [self[f"text_{code}"] for code in ORDER]


def _number(raw: str):
    """A posted number as the API's JSON would carry it (the serializer refuses anything else)."""
    text = (raw or "").strip()
    if text.lstrip("-").isdigit():
        return int(text)
    return text


def _attribute_value(text: str):
    if text in ("true", "false"):
        return text == "true"
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text


def _input(post) -> dict:
    """The posted values as the API's body."""
    attributes = {}
    for line in post.get("attributes", "").splitlines():
        if line.strip():
            key, _sep, value = line.partition("=")
            attributes[key.strip()] = _attribute_value(value.strip())
    agent = post.get("agent") or ""
    return {
        "name": post.get("name", ""),
        "enabled": post.get("enabled") == "on",
        "text_i18n": {code: post[f"text_{code}"] for code in ORDER if post.get(f"text_{code}", "").strip()},
        "agent_id": int(agent) if agent.isdigit() else None,
        "rules": {
            "url_patterns": [line.strip() for line in post.get("url_patterns", "").splitlines() if line.strip()],
            "time_on_page_seconds": _number(post.get("time_on_page_seconds") or "0"),
            "visits_at_least": _number(post.get("visits_at_least") or "1"),
            "attributes": attributes,
            "only_when_open": post.get("only_when_open") == "on",
        },
        "frequency": post.get("frequency", ""),
        "priority": _number(post.get("priority") or "0"),
    }


def _initial(row: ProactiveMessage | None) -> dict:
    if row is None:
        return dict(NEW_VALUES)
    rules = row.rules or {}
    values = {
        "name": row.name,
        "enabled": row.enabled,
        "agent": str(row.agent_id or ""),
        "url_patterns": "\n".join(rules.get("url_patterns") or []),
        "time_on_page_seconds": str(rules.get("time_on_page_seconds", 0)),
        "visits_at_least": str(rules.get("visits_at_least", 1)),
        "attributes": "\n".join(f"{k}={_shown(v)}" for k, v in (rules.get("attributes") or {}).items()),
        "only_when_open": bool(rules.get("only_when_open")),
        "frequency": row.frequency,
        "priority": str(row.priority),
    }
    for code, text in (row.text_i18n or {}).items():
        values[f"text_{code}"] = text
    return values


def _shown(value) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def _fields(outcome) -> dict[str, str]:
    """The API's member paths (`rules.url_patterns.0`, `text_i18n.de`, `agent_id`) mapped to the form's
    fields, so each message lands beside its input."""
    mapped = {"agent_id": "agent"}
    for key in outcome.errors:
        parts = key.split(".")
        if parts[0] == "rules" and len(parts) > 1 and parts[1] in RULE_FIELDS:
            mapped[key] = parts[1]
        elif parts[0] == "text_i18n" and len(parts) > 1 and parts[1] in LANGUAGES:
            mapped[key] = f"text_{parts[1]}"
    return mapped


def _row_or_404(request, message_id: str) -> ProactiveMessage:
    """The widget's proactive message; another widget's id is 404 like a missing one."""
    row = selectors.get_message(widget=request.agent.widget, message_id=console_views.parse_id(message_id) or 0)
    if row is None:
        raise Http404("No such proactive message.")
    return row


def _list_url() -> str:
    return reverse("console:settings:widget-proactive")


# --- the list ----------------------------------------------------------------------------------------


@never_cache
@owner_required
@require_http_methods(["GET"])
def proactive_list(request):
    widget = request.agent.widget
    rows = list(selectors.list_messages(widget).select_related("agent"))
    figures = selectors.stats_by_message(widget, now=timezone.now())
    zero = {"shown": 0, "opened": 0, "replied": 0}
    listed = [{"row": row, "stats": figures.get(row.pk, zero)} for row in rows]
    context = settings_context(request, area="widget", listed=listed)
    return render(request, "console/settings/widget/proactive_list.html", context)


# --- writes --------------------------------------------------------------------------------------------


@never_cache
@owner_required
@require_http_methods(["GET", "POST"])
def create(request):
    widget = request.agent.widget
    if request.method == "GET":
        return _form_page(request, ProactiveForm(initial=_initial(None), widget=widget), row=None)
    form = ProactiveForm(request.POST, widget=widget)
    outcome = settings_forms.submit(
        s.ProactiveMessageInput,
        _input(request.POST),
        lambda v: services.create_message(widget=widget, data=dict(v)),
        context=settings_forms.api_context(request),
    )
    if outcome.refused:
        settings_forms.bind(form, outcome, fields=_fields(outcome))
        return _form_page(request, form, row=None, status=outcome.status)
    messages.success(request, _("Proactive message “%(name)s” created.") % {"name": outcome.value.name})
    return HttpResponseRedirect(_list_url(), status=303)


@never_cache
@owner_required
@require_http_methods(["GET", "POST"])
def edit(request, message_id):
    widget = request.agent.widget
    row = _row_or_404(request, message_id)
    if request.method == "GET":
        return _form_page(request, ProactiveForm(initial=_initial(row), widget=widget), row=row)
    form = ProactiveForm(request.POST, widget=widget)
    outcome = settings_forms.submit(
        s.ProactiveMessagePatchInput,
        _input(request.POST),
        lambda v: services.update_message(widget=widget, message=row, changes=dict(v)),
        context=settings_forms.api_context(request),
        partial=True,
    )
    if outcome.refused:
        settings_forms.bind(form, outcome, fields=_fields(outcome))
        return _form_page(request, form, row=row, status=outcome.status)
    messages.success(request, _("Saved."))
    return HttpResponseRedirect(_list_url(), status=303)


@never_cache
@owner_required
@require_POST
def toggle(request, message_id):
    """Enable or disable (`enabled` posted as `on` or anything else), as PATCH {enabled} does."""
    widget = request.agent.widget
    row = _row_or_404(request, message_id)
    outcome = settings_forms.submit(
        s.ProactiveMessagePatchInput,
        {"enabled": request.POST.get("enabled") == "on"},
        lambda v: services.update_message(widget=widget, message=row, changes=dict(v)),
        context=settings_forms.api_context(request),
        partial=True,
    )
    if outcome.refused:
        messages.error(request, outcome.message)
    elif outcome.value.enabled:
        messages.success(request, _("“%(name)s” is enabled.") % {"name": row.name})
    else:
        messages.success(request, _("“%(name)s” is disabled.") % {"name": row.name})
    return HttpResponseRedirect(_list_url(), status=303)


@never_cache
@owner_required
@require_http_methods(["GET", "POST"])
def delete(request, message_id):
    widget = request.agent.widget
    row = _row_or_404(request, message_id)
    if request.method == "GET":
        return render(
            request,
            "console/settings/widget/proactive_delete.html",
            settings_context(request, area="widget", row=row),
        )
    outcome = settings_forms.perform(lambda: services.delete_message(widget=widget, message=row))
    if outcome.refused:  # no refusal is known for a delete; shown all the same rather than hidden
        messages.error(request, outcome.message)
    else:
        messages.success(request, _("Proactive message “%(name)s” deleted.") % {"name": row.name})
    return HttpResponseRedirect(_list_url(), status=303)


def _form_page(request, form, *, row, status=200):
    return render(
        request,
        "console/settings/widget/proactive_form.html",
        settings_context(request, area="widget", form=form, row=row),
        status=status,
    )
