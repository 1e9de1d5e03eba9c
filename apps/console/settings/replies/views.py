"""The Replies area: the widget's canned responses, which operators insert with `/shortcut` in the
reply box. List with search, create, edit, delete (after a confirmation), over apps.canned.services
with the API's serializers: the same refusals (409 `shortcut_taken`, 422 `unknown_variable`) in the
API's words, and audit rows with the owner as actor (the services write them)."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.core.paginator import Paginator
from django.http import Http404, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods

from apps.canned import selectors, services
from apps.canned.api import serializers as s
from apps.canned.models import CannedResponse

from ... import views as console_views
from .. import forms as settings_forms
from ..access import owner_required
from ..views import settings_context

PER_PAGE = 50
LANGUAGE_NAMES = {
    "en": "English",
    "ar": "العربية",
    "de": "Deutsch",
    "el": "Ελληνικά",
    "es": "Español",
    "ru": "Русский",
    "zh": "中文",
}


def _language_choices(empty_label) -> list[tuple[str, str]]:
    return [("", empty_label), *[(code, LANGUAGE_NAMES.get(code, code)) for code in s.LANGUAGES]]


class ReplyForm(forms.Form):
    """Draws and parses a canned response's inputs; the API's CannedResponseInput decides."""

    shortcut = forms.CharField(
        label=gettext_lazy("Shortcut"),
        help_text=gettext_lazy("Operators type / and this word: a to z, 0 to 9, _ and -, up to 32."),
        widget=forms.TextInput(attrs={"dir": "ltr", "autocomplete": "off", "spellcheck": "false"}),
    )
    title = forms.CharField(label=gettext_lazy("Title"))
    text = forms.CharField(label=gettext_lazy("Text"), strip=False, widget=forms.Textarea(attrs={"rows": 5}))
    language = forms.ChoiceField(label=gettext_lazy("Language"), required=False, choices=())

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["language"].choices = _language_choices(_("Any language"))
        names = ", ".join("{{%s}}" % name for name in s.NAMES)  # noqa: UP031 (braces of the variables)
        self.fields["text"].help_text = _(
            "Variables filled in for the chat: %(names)s; a fallback after |, as in {{contact.name|there}}."
        ) % {"names": names}


class SearchForm(forms.Form):
    q = forms.CharField(label=gettext_lazy("Search"), required=False)
    language = forms.ChoiceField(label=gettext_lazy("Language"), required=False, choices=())

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["language"].choices = _language_choices(_("All languages"))


def _input(post) -> dict:
    """The posted values as the API's body (an empty language is null: any language)."""
    return {
        "shortcut": post.get("shortcut", ""),
        "title": post.get("title", ""),
        "text": post.get("text", ""),
        "language": post.get("language") or None,
    }


def _row_or_404(request, canned_id: str) -> CannedResponse:
    """The widget's canned response; another widget's id is 404 like a missing one."""
    row = CannedResponse.objects.filter(widget=request.agent.widget, pk=console_views.parse_id(canned_id) or 0).first()
    if row is None:
        raise Http404("No such canned response.")
    return row


def _list_url() -> str:
    return reverse("console:settings:replies")


# --- the list --------------------------------------------------------------------------------------


@never_cache
@owner_required
@require_http_methods(["GET"])
def replies(request):
    widget = request.agent.widget
    search = SearchForm(request.GET or None, auto_id="search-%s")
    query = {key: request.GET[key] for key in ("q", "language") if request.GET.get(key)}
    validated, refused = settings_forms.validate(s.CannedListQuery, query)
    status = 200
    queryset = CannedResponse.objects.filter(widget=widget).order_by("shortcut", "id")
    if refused is not None:
        settings_forms.bind(search, refused)
        status = refused.status
        queryset = queryset.none()
    else:
        queryset = selectors.list_canned_responses(
            queryset, q=(validated.get("q") or "").strip() or None, language=validated.get("language")
        )
    page = Paginator(queryset, PER_PAGE).get_page(request.GET.get("page"))
    context = settings_context(
        request,
        area="replies",
        search=search,
        searching=bool(query),
        page=page,
        rows=list(page.object_list),
        language_names=LANGUAGE_NAMES,
        form=ReplyForm(),
    )
    return render(request, "console/settings/replies/list.html", context, status=status)


# --- writes ------------------------------------------------------------------------------------------


@never_cache
@owner_required
@require_http_methods(["GET", "POST"])
def create(request):
    widget = request.agent.widget
    if request.method == "GET":
        return _form_page(request, ReplyForm(), row=None)
    form = ReplyForm(request.POST)
    outcome = settings_forms.submit(
        s.CannedResponseInput, _input(request.POST), lambda v: services.create_canned_response(widget=widget, **v)
    )
    if outcome.refused:
        settings_forms.bind(form, outcome)
        return _form_page(request, form, row=None, status=outcome.status)
    messages.success(request, _("Reply /%(shortcut)s created.") % {"shortcut": outcome.value.shortcut})
    return HttpResponseRedirect(_list_url(), status=303)


@never_cache
@owner_required
@require_http_methods(["GET", "POST"])
def edit(request, canned_id):
    widget = request.agent.widget
    row = _row_or_404(request, canned_id)
    if request.method == "GET":
        initial = {"shortcut": row.shortcut, "title": row.title, "text": row.text, "language": row.language or ""}
        return _form_page(request, ReplyForm(initial=initial), row=row)
    form = ReplyForm(request.POST)
    outcome = settings_forms.submit(
        s.CannedResponsePatchInput,
        _input(request.POST),
        lambda v: services.update_canned_response(widget=widget, canned=row, changes=dict(v)),
        partial=True,
    )
    if outcome.refused:
        settings_forms.bind(form, outcome)
        return _form_page(request, form, row=row, status=outcome.status)
    messages.success(request, _("Saved."))
    return HttpResponseRedirect(_list_url(), status=303)


@never_cache
@owner_required
@require_http_methods(["GET", "POST"])
def delete(request, canned_id):
    widget = request.agent.widget
    row = _row_or_404(request, canned_id)
    if request.method == "GET":
        return render(
            request,
            "console/settings/replies/delete.html",
            settings_context(request, area="replies", row=row),
        )
    outcome = settings_forms.perform(lambda: services.delete_canned_response(widget=widget, canned=row))
    if outcome.refused:  # no refusal is known for a delete; shown all the same rather than hidden
        messages.error(request, outcome.message)
    else:
        messages.success(request, _("Reply /%(shortcut)s deleted.") % {"shortcut": row.shortcut})
    return HttpResponseRedirect(_list_url(), status=303)


def _form_page(request, form, *, row, status=200):
    return render(
        request,
        "console/settings/replies/form.html",
        settings_context(request, area="replies", form=form, row=row),
        status=status,
    )
