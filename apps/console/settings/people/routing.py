"""/console/settings/people/routing/: how chats reach operators (RoutingSettingsInput, put_settings),
and each operator's capacity on the People page (AgentPatchInput, update_agent). The posted text
becomes the API's JSON body first (numbers as integers where they are numbers, the raw text
otherwise), so the serializer judges the same body the API would and answers in the same words."""

from __future__ import annotations

from django import forms as django_forms
from django.contrib import messages
from django.shortcuts import render
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from apps.agents import services as agent_services
from apps.agents.api.serializers import AgentPatchInput
from apps.routing import selectors, services
from apps.routing.api.serializers import RoutingSettingsInput
from apps.routing.models import RoutingSettings

from .. import forms
from ..access import owner_required
from ..views import settings_context
from . import pages
from .views import _back, _context

TEMPLATE = "console/settings/people/routing.html"

MODES = (
    (
        RoutingSettings.Mode.MANUAL,
        gettext_lazy("Manual"),
        gettext_lazy("Nobody is assigned automatically: an operator takes a waiting chat from the list."),
    ),
    (
        RoutingSettings.Mode.ROUND_ROBIN,
        gettext_lazy("Round robin"),
        gettext_lazy("Each new chat goes to the available operator who received a chat the longest time ago."),
    ),
    (
        RoutingSettings.Mode.LEAST_BUSY,
        gettext_lazy("Least busy"),
        gettext_lazy("Each new chat goes to the available operator with the fewest open chats."),
    ),
)


class RoutingForm(django_forms.Form):
    """Draws the inputs; RoutingSettingsInput judges them."""

    mode = django_forms.ChoiceField(
        label=gettext_lazy("How chats are assigned"),
        required=False,
        choices=[(value, label) for value, label, _help in MODES],
        widget=django_forms.RadioSelect,
    )
    default_capacity = django_forms.CharField(
        label=gettext_lazy("Capacity of each operator"),
        required=False,
        widget=django_forms.NumberInput(attrs={"min": 1, "max": 50, "step": 1, "inputmode": "numeric"}),
        help_text=gettext_lazy(
            "The most open chats an operator is given at once, from 1 to 50. You can set another number "
            "for one operator on the People page."
        ),
    )
    reroute_after_seconds = django_forms.CharField(
        label=gettext_lazy("Move an unanswered chat after (seconds)"),
        required=False,
        widget=django_forms.NumberInput(attrs={"min": 15, "max": 900, "step": 1, "inputmode": "numeric"}),
        help_text=gettext_lazy(
            "When the operator a chat was given writes nothing to the visitor for this long, the chat goes "
            "to the next available operator. From 15 to 900 seconds; leave empty to never move a chat."
        ),
    )
    show_queue_position = django_forms.BooleanField(
        label=gettext_lazy("Tell waiting visitors their place in line and the expected wait"),
        required=False,
    )


def posted_number(value: str):
    """A number as the API's body holds it: an integer where the text is one, else the text itself
    (the serializer's "Must be an integer." names it)."""
    text = value.strip()
    try:
        return int(text)
    except ValueError:
        return text


def _initial(row: RoutingSettings) -> dict:
    return {
        "mode": row.mode,
        "default_capacity": row.default_capacity,
        "reroute_after_seconds": "" if row.reroute_after_seconds is None else row.reroute_after_seconds,
        "show_queue_position": row.show_queue_position,
    }


def routing_body(post) -> dict:
    """The PUT body the page's inputs mean: an empty capacity is a missing member (the API asks for
    it), an empty re-routing delay is null (off), an unticked box is false."""
    body: dict = {"show_queue_position": post.get("show_queue_position") == "on"}
    if "mode" in post:
        body["mode"] = post.get("mode", "")
    capacity = post.get("default_capacity", "").strip()
    if capacity:
        body["default_capacity"] = posted_number(capacity)
    reroute = post.get("reroute_after_seconds", "").strip()
    body["reroute_after_seconds"] = posted_number(reroute) if reroute else None
    return body


def _page(request, form, *, status: int = 200):
    helps = {value: help_text for value, _label, help_text in MODES}
    modes = [(choice, helps[choice.data["value"]]) for choice in form["mode"]]
    context = settings_context(request, area="people", people_tab="routing", form=form, modes=modes)
    return render(request, TEMPLATE, context, status=status)


@never_cache
@owner_required
@require_http_methods(["GET", "POST"])
def routing(request):
    """GET: the widget's routing settings; POST: all of them at once (PUT /v1/routing)."""
    widget = request.agent.widget
    if request.method == "GET":
        return _page(request, RoutingForm(initial=_initial(selectors.routing_settings(widget))))
    outcome = forms.submit(
        RoutingSettingsInput,
        routing_body(request.POST),
        lambda v: services.put_settings(widget=widget, data=v),
        context=pages.api_context(request),
    )
    if outcome.refused:
        return _page(request, pages.refused(RoutingForm(request.POST), outcome), status=outcome.status)
    messages.success(request, _("Saved."))
    return _back("console:settings:people-routing")


@never_cache
@owner_required
@require_POST
def capacity(request, pk):
    """One operator's capacity (PATCH /v1/agents/{id} with `capacity`): empty is null, the widget's
    default."""
    agent = pages.operator_of(request, pk)
    widget = request.agent.widget
    text = request.POST.get("capacity", "").strip()
    data = {"capacity": posted_number(text) if text else None}
    outcome = forms.submit(
        AgentPatchInput,
        data,
        lambda v: agent_services.update_agent(widget=widget, agent=agent, changes={"capacity": v["capacity"]}),
        context=pages.api_context(request),
    )
    if outcome.refused:
        refused = {"pk": agent.pk, "value": text, "errors": outcome.field_errors("capacity") or outcome.general}
        return render(
            request,
            "console/settings/people/index.html",
            _context(request, capacity_refused=refused),
            status=outcome.status,
        )
    count = outcome.value.capacity
    if count is None:
        done = _("%(name)s takes the default number of chats.") % {"name": agent.name}
    else:
        done = ngettext(
            "%(name)s takes at most %(count)s chat at once.", "%(name)s takes at most %(count)s chats at once.", count
        ) % {"name": agent.name, "count": count}
    messages.success(request, done)
    return _back()
