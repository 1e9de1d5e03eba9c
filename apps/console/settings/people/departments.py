"""/console/settings/people/departments/: create, rename, channels, members, schedule, delete, each
through the API route's serializer (DepartmentInput, DepartmentPatchInput, DepartmentAgentsInput,
DepartmentScheduleInput) and service."""

from __future__ import annotations

from django.contrib import messages
from django.shortcuts import render
from django.utils.translation import gettext as _
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from apps.agents import services
from apps.agents.api import serializers as s
from apps.agents.services import full_week

from .. import forms
from ..access import owner_required
from ..views import settings_context
from . import pages
from .views import _back, _context

TEMPLATE = "console/settings/people/department.html"


def _detail(request, department, *, status=200, **extra):
    widget = request.agent.widget
    members = sorted(a.pk for a in department.agents.all())
    context = {
        "department": department,
        "edit_form": extra.pop("edit_form", None)
        or pages.DepartmentForm(widget=widget, initial={"name": department.name, "channels": department.channels}),
        "members_form": extra.pop("members_form", None)
        or pages.MembersForm(widget=widget, keep=members, initial={"agent_ids": [str(pk) for pk in members]}),
        "week": extra.pop("week", None) or pages.week_rows(full_week(department.schedule)),
        **extra,
    }
    return render(request, TEMPLATE, settings_context(request, area="people", **context), status=status)


@never_cache
@owner_required
@require_POST
def create(request):
    widget = request.agent.widget
    data = {
        "name": request.POST.get("name", ""),
        "channels": request.POST.getlist("channels"),
    }
    outcome = forms.submit(
        s.DepartmentInput,
        data,
        lambda v: services.create_department(widget=widget, name=v["name"], channels=v.get("channels")),
        context=pages.api_context(request),
    )
    if outcome.refused:
        form = pages.refused(pages.DepartmentForm(request.POST, widget=widget), outcome)
        return render(
            request,
            "console/settings/people/index.html",
            _context(request, department_form=form),
            status=outcome.status,
        )
    messages.success(request, _("Department %(name)s created.") % {"name": outcome.value.name})
    return _back("console:settings:people-department", pk=outcome.value.pk)


@never_cache
@owner_required
@require_http_methods(["GET", "POST"])
def detail(request, pk):
    """GET: the department's page; POST: its name and channels (PATCH's serializer)."""
    department = pages.department_of(request, pk)
    if request.method == "GET":
        return _detail(request, department)
    widget = request.agent.widget
    data = {"name": request.POST.get("name", ""), "channels": request.POST.getlist("channels")}
    outcome = forms.submit(
        s.DepartmentPatchInput,
        data,
        lambda v: services.update_department(
            widget=widget, department=department, name=v.get("name"), channels=v.get("channels")
        ),
        context=pages.api_context(request),
    )
    if outcome.refused:
        form = pages.refused(pages.DepartmentForm(request.POST, widget=widget), outcome)
        return _detail(request, department, status=outcome.status, edit_form=form)
    messages.success(request, _("Saved."))
    return _back("console:settings:people-department", pk=department.pk)


@never_cache
@owner_required
@require_POST
def members(request, pk):
    department = pages.department_of(request, pk)
    widget = request.agent.widget
    data = {"agent_ids": pages.posted_ids(request.POST.getlist("agent_ids"))}
    outcome = forms.submit(
        s.DepartmentAgentsInput,
        data,
        lambda v: services.set_department_agents(widget=widget, department=department, agents=v["agent_ids"]),
        context=pages.api_context(request),
    )
    if outcome.refused:
        keep = sorted(a.pk for a in department.agents.all())
        form = pages.refused(pages.MembersForm(request.POST, widget=widget, keep=keep), outcome)
        return _detail(request, department, status=outcome.status, members_form=form)
    messages.success(request, _("Members saved."))
    return _back("console:settings:people-department", pk=department.pk)


@never_cache
@owner_required
@require_POST
def schedule(request, pk):
    department = pages.department_of(request, pk)
    widget = request.agent.widget
    week = pages.posted_week(request.POST)
    outcome = forms.submit(
        s.DepartmentScheduleInput,
        {"schedule": week},
        lambda v: services.set_department_schedule(widget=widget, department=department, schedule=v["schedule"]),
        context=pages.api_context(request),
    )
    if outcome.refused:
        return _detail(
            request,
            department,
            status=outcome.status,
            week=pages.week_rows(week, outcome.errors),
            schedule_refusal=outcome.general,
        )
    messages.success(request, _("Schedule saved."))
    return _back("console:settings:people-department", pk=department.pk)


@never_cache
@owner_required
@require_http_methods(["GET", "POST"])
def delete(request, pk):
    department = pages.department_of(request, pk)
    if request.method == "GET":
        return render(
            request,
            "console/settings/people/department_delete.html",
            settings_context(request, area="people", department=department),
        )
    forms.perform(lambda: services.delete_department(widget=request.agent.widget, department=department))
    messages.success(request, _("Department %(name)s deleted.") % {"name": department.name})
    return _back()
