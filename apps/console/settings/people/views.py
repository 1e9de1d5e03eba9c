"""/console/settings/people/: the widget's operators, invitations and departments.

Every write goes through the API route's serializer and service (`forms.submit` / `forms.perform`),
so a refusal here is the API's, word for word. Suspending and deleting ask for a confirmation first
(a GET of the action's URL draws it; the POST does it).
"""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from apps.agents import selectors, services
from apps.agents.api import serializers as s
from apps.agents.models import Agent, Department, Invitation
from apps.routing import selectors as routing_selectors

from .. import forms
from ..access import owner_required
from ..views import settings_context
from . import pages

ACTIONS = ("suspend", "restore", "delete")


def _back(name: str = "console:settings:people", **kwargs) -> HttpResponseRedirect:
    return HttpResponseRedirect(reverse(name, kwargs=kwargs or None), status=303)


def _operators(widget) -> list[dict]:
    online = selectors.online_agent_ids(widget)
    agents = (
        Agent.objects.filter(widget=widget, type=Agent.Type.HUMAN)
        .prefetch_related("departments")
        .order_by("created_at", "pk")
    )
    return [
        {
            "agent": agent,
            "role": pages.ROLE_NAMES.get(agent.role, agent.role),
            "status": pages.STATUS_NAMES.get(agent.status, agent.status),
            "departments": sorted(d.name for d in agent.departments.all()),
            "online": agent.pk in online,
        }
        for agent in agents
    ]


def _context(request, *, invite_form=None, department_form=None, **extra) -> dict:
    widget = request.agent.widget
    account = widget.account
    pending = [i for i in Invitation.objects.filter(widget=widget).order_by("-created_at") if i.state() == "pending"]
    return settings_context(
        request,
        area="people",
        people_tab="people",
        operators=_operators(widget),
        invitations=pending,
        departments=Department.objects.filter(widget=widget).prefetch_related("agents").order_by("name", "pk"),
        seats=account.seats,
        seats_used=selectors.seats_used(account),
        default_capacity=routing_selectors.routing_settings(widget).default_capacity,
        invite_form=invite_form or pages.InviteForm(),
        department_form=department_form or pages.DepartmentForm(widget=widget, initial={"channels": ["smb"]}),
        **extra,
    )


@never_cache
@owner_required
@require_GET
def people(request):
    return render(request, "console/settings/people/index.html", _context(request))


@never_cache
@owner_required
@require_POST
def invite(request):
    widget = request.agent.widget
    data = {"email": request.POST.get("email", "")}
    outcome = forms.submit(
        s.InvitationInput,
        data,
        lambda v: services.invite_agent(
            widget=widget,
            email=v["email"],
            link_for=lambda token: services.invitation_link(token, absolute=request.build_absolute_uri),
        ),
        context=pages.api_context(request),
    )
    if outcome.refused:
        form = pages.refused(pages.InviteForm(data), outcome)
        return render(
            request, "console/settings/people/index.html", _context(request, invite_form=form), status=outcome.status
        )
    messages.success(request, _("Invitation sent to %(email)s.") % {"email": outcome.value.email})
    return _back()


@never_cache
@owner_required
@require_POST
def revoke_invitation(request, pk):
    invitation = pages.invitation_of(request, pk)
    forms.perform(lambda: services.revoke_invitation(widget=request.agent.widget, invitation=invitation))
    messages.success(request, _("Invitation to %(email)s revoked.") % {"email": invitation.email})
    return _back()


def _self_refusal(request, agent: Agent, action: str) -> str | None:
    """The console's own rule: the owner does not lock themselves out of it."""
    if agent.pk == request.agent.pk and action in ("suspend", "delete"):
        return _("You cannot suspend or delete yourself: you would lose access to the console.")
    return None


def _confirm(request, context: dict, *, status: int):
    context = settings_context(request, area="people", **context)
    return render(request, "console/settings/people/confirm.html", context, status=status)


@never_cache
@owner_required
@require_http_methods(["GET", "POST"])
def operator_action(request, pk, action):
    if action not in ACTIONS:
        raise Http404("No such action.")
    agent = pages.operator_of(request, pk)
    widget = request.agent.widget
    refusal = _self_refusal(request, agent, action)
    context = {"operator": agent, "action": action, "refusal": refusal}
    if request.method == "GET" or refusal:
        status = 409 if refusal and request.method == "POST" else 200
        return _confirm(request, context, status=status)
    call = {"suspend": services.suspend_agent, "restore": services.restore_agent, "delete": services.delete_agent}
    outcome = forms.perform(lambda: call[action](widget=widget, agent=agent))
    if outcome.refused:
        context["refusal"] = outcome.message
        return _confirm(request, context, status=outcome.status)
    done = {
        "suspend": _("%(name)s is suspended."),
        "restore": _("%(name)s is active again."),
        "delete": _("%(name)s no longer has access to the console."),
    }
    messages.success(request, done[action] % {"name": agent.name})
    return _back()
