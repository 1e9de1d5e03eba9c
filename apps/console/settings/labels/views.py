"""The Labels area: the labels operators put on chats. List, create, rename and recolour, delete
(after a confirmation that says how many chats carry the label), over apps.chats.services with the
API's serializers (LabelInput): the same refusals (409 `label_taken`, 422) in the API's words, and
audit rows with the owner as actor (the services write them)."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.http import Http404, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods

from apps.chats import selectors, services
from apps.chats.api import serializers as s
from apps.chats.models import ChatLabel, Label

from ... import views as console_views
from .. import forms as settings_forms
from ..access import owner_required
from ..views import settings_context


class LabelForm(forms.Form):
    """Draws and parses a label's inputs; the API's LabelInput decides."""

    name = forms.CharField(
        label=gettext_lazy("Name"),
        help_text=gettext_lazy("Up to 50 characters; two labels cannot differ only in capital letters."),
        widget=forms.TextInput(attrs={"dir": "auto", "autocomplete": "off"}),
    )
    color = forms.CharField(
        label=gettext_lazy("Colour"),
        required=False,
        help_text=gettext_lazy("Optional: # and six hexadecimal digits, as #2a7ae2."),
        widget=forms.TextInput(attrs={"dir": "ltr", "autocomplete": "off", "spellcheck": "false", "size": 8}),
    )

    def __init__(self, *args, prefix_id: str = "", **kwargs):
        if prefix_id:
            kwargs.setdefault("auto_id", f"{prefix_id}-%s")
        super().__init__(*args, **kwargs)


def _input(post) -> dict:
    """The posted values as the API's body (an empty colour is null: none)."""
    return {"name": post.get("name", ""), "color": post.get("color", "").strip() or None}


def _row_or_404(request, label_id: str) -> Label:
    """The widget's label; another widget's id is 404 like a missing one."""
    row = Label.objects.filter(widget=request.agent.widget, pk=console_views.parse_id(label_id) or 0).first()
    if row is None:
        raise Http404("No such label.")
    return row


def _list_url() -> str:
    return reverse("console:settings:labels")


@never_cache
@owner_required
@require_http_methods(["GET"])
def labels(request):
    return _list_page(request, LabelForm())


def _list_page(request, form, *, status=200):
    rows = list(selectors.list_labels(widget=request.agent.widget))
    for row in rows:
        row.form = LabelForm(initial={"name": row.name, "color": row.color}, prefix_id=f"label-{row.pk}")
    context = settings_context(request, area="labels", rows=rows, form=form)
    return render(request, "console/settings/labels/list.html", context, status=status)


@never_cache
@owner_required
@require_http_methods(["POST"])
def create(request):
    widget = request.agent.widget
    form = LabelForm(request.POST)
    outcome = settings_forms.submit(
        s.LabelInput,
        _input(request.POST),
        lambda v: services.create_label(widget=widget, name=v["name"], color=v.get("color") or ""),
    )
    if outcome.refused:
        settings_forms.bind(form, outcome)
        return _list_page(request, form, status=outcome.status)
    messages.success(request, _("Label “%(name)s” created.") % {"name": outcome.value.name})
    return HttpResponseRedirect(_list_url(), status=303)


@never_cache
@owner_required
@require_http_methods(["GET", "POST"])
def edit(request, label_id):
    widget = request.agent.widget
    row = _row_or_404(request, label_id)
    if request.method == "GET":
        return _form_page(request, LabelForm(initial={"name": row.name, "color": row.color}), row=row)
    form = LabelForm(request.POST)
    outcome = settings_forms.submit(
        s.LabelPatchInput,
        _input(request.POST),
        lambda v: services.update_label(widget=widget, label=row, changes=dict(v)),
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
def delete(request, label_id):
    widget = request.agent.widget
    row = _row_or_404(request, label_id)
    if request.method == "GET":
        chats = ChatLabel.objects.filter(widget=widget, label=row).count()
        return render(
            request,
            "console/settings/labels/delete.html",
            settings_context(request, area="labels", row=row, chats=chats),
        )
    outcome = settings_forms.perform(lambda: services.delete_label(widget=widget, label=row))
    if outcome.refused:  # no refusal is known for a delete; shown all the same rather than hidden
        messages.error(request, outcome.message)
    else:
        messages.success(request, _("Label “%(name)s” deleted.") % {"name": row.name})
    return HttpResponseRedirect(_list_url(), status=303)


def _form_page(request, form, *, row, status=200):
    return render(
        request,
        "console/settings/labels/form.html",
        settings_context(request, area="labels", form=form, row=row),
        status=status,
    )
