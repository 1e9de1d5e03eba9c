"""The Macros area: the owner's macros, which operators run from the picker beside the composer.
List, create, edit, delete (after a confirmation), over apps.macros.services with the API's
MacroInput: the same refusals in the API's words, audit rows with the owner as actor.

The owner sees the shared macros and their own personal ones; an operator's personal macros are
theirs alone (made through the API) and read here as missing. Actions are edited as rows, a type
select and its inputs each, never as JSON; a row without a type is left out."""

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

from apps.agents.models import Agent, Department
from apps.automation.actions import ACTION_TYPES, MAX_ACTIONS
from apps.chats.models import Label
from apps.macros import selectors, services
from apps.macros.api import serializers as s
from apps.macros.models import Macro

from ... import views as console_views
from .. import forms as settings_forms
from ..access import owner_required
from ..views import settings_context

TYPE_NAMES = {
    "send_message": gettext_lazy("Send a message"),
    "add_note": gettext_lazy("Add a private note"),
    "add_labels": gettext_lazy("Add labels"),
    "remove_labels": gettext_lazy("Remove labels"),
    "assign_agent": gettext_lazy("Assign to an operator"),
    "assign_department": gettext_lazy("Move to a department"),
    "close": gettext_lazy("Close the chat"),
}
# the member each type takes (close takes none)
MEMBER_OF = {
    "send_message": "text",
    "add_note": "text",
    "add_labels": "labels",
    "remove_labels": "labels",
    "assign_agent": "agent_id",
    "assign_department": "department_id",
}


class MacroForm(forms.Form):
    """Draws and parses the name and visibility; the API's MacroInput and the service decide."""

    name = forms.CharField(label=gettext_lazy("Name"))
    visibility = forms.ChoiceField(
        label=gettext_lazy("Who sees it"),
        choices=(("all", gettext_lazy("Every operator")), ("personal", gettext_lazy("Only me"))),
        help_text=gettext_lazy("Operators keep their own macros through the API; they are not listed here."),
    )


def _id(raw: str | None) -> int | str | None:
    return console_views.parse_id(raw) or (raw or None)


def _rows(post) -> tuple[list[dict], list[int]]:
    """The posted rows as the API's `actions` (rows without a type left out), and for each action
    the row it came from (to put a refusal of `actions.<i>` under its row)."""
    actions, origin = [], []
    for index in range(MAX_ACTIONS):
        kind = post.get(f"actions-{index}-type", "")
        if not kind:
            continue
        action: dict = {"type": kind}
        member = MEMBER_OF.get(kind)
        if member == "text":
            action["text"] = post.get(f"actions-{index}-text", "")
        elif member == "labels":
            action["labels"] = post.getlist(f"actions-{index}-labels")
        elif member in ("agent_id", "department_id"):
            action[member] = _id(post.get(f"actions-{index}-{member}"))
        actions.append(action)
        origin.append(index)
    return actions, origin


def _row_errors(outcome, origin: list[int]) -> tuple[dict[int, list[str]], dict]:
    """`actions.<i>...` messages by row; the rest stay for the form."""
    by_row: dict[int, list[str]] = {}
    rest = {}
    for key, messages_ in outcome.errors.items():
        parts = key.split(".")
        if parts[0] == "actions" and len(parts) > 1 and parts[1].isdigit() and int(parts[1]) < len(origin):
            by_row.setdefault(origin[int(parts[1])], []).extend(messages_)
        else:
            rest[key] = messages_
    return by_row, rest


def _draw_rows(widget, actions: list[dict], errors: dict[int, list[str]] | None = None) -> list[dict]:
    errors = errors or {}
    rows = []
    for index in range(MAX_ACTIONS):
        action = actions[index] if index < len(actions) else {}
        rows.append(
            {
                "index": index,
                "number": index + 1,
                "type": action.get("type", ""),
                "text": action.get("text", ""),
                "labels": [str(name) for name in action.get("labels", [])],
                "agent_id": str(action.get("agent_id") or ""),
                "department_id": str(action.get("department_id") or ""),
                "errors": errors.get(index, []),
                "spare": index > 0 and not action and not errors.get(index),
            }
        )
    return rows


def _choices(widget) -> dict:
    labels = list(Label.objects.filter(widget=widget).order_by("key").values_list("name", flat=True))
    return {
        "types": [(kind, TYPE_NAMES[kind]) for kind in ACTION_TYPES],
        "labels": labels,
        # a list box, never a drop-down look: at least two lines, at most four
        "labels_size": min(max(len(labels), 2), 4),
        "agents": list(
            Agent.objects.filter(widget=widget)
            .exclude(status=Agent.Status.BANNED)
            .order_by("name", "pk")
            .values_list("pk", "name")
        ),
        "departments": list(Department.objects.filter(widget=widget).order_by("name", "pk").values_list("pk", "name")),
    }


def _row_or_404(request, macro_id: str) -> Macro:
    """A macro the owner sees; another widget's and an operator's personal one are 404 alike."""
    agent = request.agent
    row = selectors.get_macro_for_agent(
        widget=agent.widget, agent=agent, macro_id=console_views.parse_id(macro_id) or 0
    )
    if row is None:
        raise Http404("No such macro.")
    return row


def _list_url() -> str:
    return reverse("console:settings:macros")


def _body(request) -> tuple[dict, list[int]]:
    actions, origin = _rows(request.POST)
    visibility = request.POST.get("visibility", "")
    body = {"name": request.POST.get("name", ""), "visibility": visibility, "actions": actions}
    if visibility == "personal":
        body["agent_id"] = request.agent.pk
    elif visibility == "all":
        body["agent_id"] = None
    return body, origin


@never_cache
@owner_required
@require_http_methods(["GET"])
def macros(request):
    agent = request.agent
    rows = selectors.list_macros_for_agent(widget=agent.widget, agent=agent)
    for row in rows:
        row.summary = [TYPE_NAMES.get(action.get("type"), action.get("type")) for action in row.actions]
    return render(request, "console/settings/macros/list.html", settings_context(request, area="macros", rows=rows))


@never_cache
@owner_required
@require_http_methods(["GET", "POST"])
def create(request):
    if request.method == "GET":
        return _form_page(request, MacroForm(initial={"visibility": "all"}), row=None, actions=[])
    return _save(request, row=None)


@never_cache
@owner_required
@require_http_methods(["GET", "POST"])
def edit(request, macro_id):
    row = _row_or_404(request, macro_id)
    if request.method == "GET":
        form = MacroForm(initial={"name": row.name, "visibility": row.visibility})
        return _form_page(request, form, row=row, actions=row.actions)
    return _save(request, row=row)


def _save(request, *, row: Macro | None):
    widget = request.agent.widget
    form = MacroForm(request.POST)
    body, origin = _body(request)
    context = settings_forms.api_context(request)
    if row is None:
        outcome = settings_forms.submit(
            s.MacroInput, body, lambda v: services.create_macro(widget=widget, **_changes(v)), context=context
        )
    else:
        outcome = settings_forms.submit(
            s.MacroPatchInput,
            body,
            lambda v: services.update_macro(widget=widget, macro=row, changes=_changes(v)),
            context=context,
            partial=True,
        )
    if outcome.refused:
        by_row, rest = _row_errors(outcome, origin)
        outcome.errors = rest
        settings_forms.bind(form, outcome, fields={"agent_id": "visibility"})
        if by_row and not rest and not form.errors:
            form.add_error(None, outcome.message)
        drawn = [dict(action) for action in body["actions"]]
        # the rows as posted, at the positions they were posted in
        placed: list[dict] = [{} for _ in range(MAX_ACTIONS)]
        for action, index in zip(drawn, origin, strict=True):
            placed[index] = action
        return _form_page(request, form, row=row, rows=_draw_rows(widget, placed, by_row), status=outcome.status)
    if row is None:
        messages.success(request, _("Macro “%(name)s” created.") % {"name": outcome.value.name})
    else:
        messages.success(request, _("Saved."))
    return HttpResponseRedirect(_list_url(), status=303)


def _changes(validated: dict) -> dict:
    changes = dict(validated)
    if "agent_id" in changes:
        changes["agent"] = changes.pop("agent_id")
    return changes


@never_cache
@owner_required
@require_http_methods(["GET", "POST"])
def delete(request, macro_id):
    widget = request.agent.widget
    row = _row_or_404(request, macro_id)
    if request.method == "GET":
        return render(request, "console/settings/macros/delete.html", settings_context(request, area="macros", row=row))
    outcome = settings_forms.perform(lambda: services.delete_macro(widget=widget, macro=row))
    if outcome.refused:  # no refusal is known for a delete; shown all the same rather than hidden
        messages.error(request, outcome.message)
    else:
        messages.success(request, _("Macro “%(name)s” deleted.") % {"name": row.name})
    return HttpResponseRedirect(_list_url(), status=303)


def _form_page(request, form, *, row, actions=None, rows=None, status=200):
    widget = request.agent.widget
    return render(
        request,
        "console/settings/macros/form.html",
        settings_context(
            request,
            area="macros",
            form=form,
            row=row,
            rows=rows if rows is not None else _draw_rows(widget, actions or []),
            choices=_choices(widget),
        ),
        status=status,
    )
