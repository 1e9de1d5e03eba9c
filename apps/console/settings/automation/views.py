"""The Automation area: the widget's rules ("when this happens, if these hold, do that"). A list
with an on/off switch per rule, a form of rows (conditions: field, operator, value; actions: a type
and its inputs) so the owner never types JSON, a rule's last runs, and deletion after a
confirmation. Every write goes through apps.automation.services with the API's serializers: the
same refusals in the API's words and audit rows with the owner as actor."""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from apps.automation import selectors, services
from apps.automation.api import serializers as s
from apps.automation.models import AutomationRule

from ... import views as console_views
from .. import forms as settings_forms
from ..access import owner_required
from ..views import settings_context
from .forms import RuleForm, event_names, rule_body, rule_initial


def _rule_or_404(request, rule_id: str) -> AutomationRule:
    """The widget's rule; another widget's id is 404 like a missing one."""
    rule = selectors.get_rule(widget=request.agent.widget, rule_id=console_views.parse_id(rule_id) or 0)
    if rule is None:
        raise Http404("No such rule.")
    return rule


def _list_url() -> str:
    return reverse("console:settings:automation")


@never_cache
@owner_required
@require_http_methods(["GET"])
def automation(request):
    rules = list(selectors.list_rules(request.agent.widget))
    context = settings_context(request, area="automation", rules=rules, event_names=event_names())
    return render(request, "console/settings/automation/list.html", context)


@never_cache
@owner_required
@require_http_methods(["GET", "POST"])
def create(request):
    widget = request.agent.widget
    if request.method == "GET":
        return _form_page(request, RuleForm(widget=widget), rule=None)
    form = RuleForm(request.POST, widget=widget)
    if request.POST.get("add_row"):  # one more row, nothing saved (the page works without script)
        return _form_page(request, form, rule=None)
    body, rows = rule_body(form)
    outcome = settings_forms.submit(s.AutomationRuleInput, body, lambda v: services.create_rule(widget=widget, **v))
    if outcome.refused:
        settings_forms.bind(form, outcome, fields=rows)
        return _form_page(request, form, rule=None, status=outcome.status)
    messages.success(request, _("Rule “%(name)s” added.") % {"name": outcome.value.name})
    return HttpResponseRedirect(_list_url(), status=303)


@never_cache
@owner_required
@require_http_methods(["GET", "POST"])
def edit(request, rule_id):
    widget = request.agent.widget
    rule = _rule_or_404(request, rule_id)
    if request.method == "GET":
        return _form_page(request, RuleForm(widget=widget, initial=rule_initial(rule), rule=rule), rule=rule)
    form = RuleForm(request.POST, widget=widget, rule=rule)
    if request.POST.get("add_row"):
        return _form_page(request, form, rule=rule)
    body, rows = rule_body(form)
    outcome = settings_forms.submit(
        s.AutomationRulePatchInput,
        body,
        lambda v: services.update_rule(widget=widget, rule=rule, changes=dict(v)),
        partial=True,
    )
    if outcome.refused:
        settings_forms.bind(form, outcome, fields=rows)
        return _form_page(request, form, rule=rule, status=outcome.status)
    messages.success(request, _("Saved."))
    return HttpResponseRedirect(_list_url(), status=303)


@never_cache
@owner_required
@require_POST
def toggle(request, rule_id):
    widget = request.agent.widget
    rule = _rule_or_404(request, rule_id)
    enabled = request.POST.get("enabled") == "true"
    outcome = settings_forms.submit(
        s.AutomationRulePatchInput,
        {"enabled": enabled},
        lambda v: services.update_rule(widget=widget, rule=rule, changes=dict(v)),
        partial=True,
    )
    if outcome.refused:
        messages.error(request, outcome.message)
    elif enabled:
        messages.success(request, _("Rule “%(name)s” is on.") % {"name": rule.name})
    else:
        messages.success(request, _("Rule “%(name)s” is off.") % {"name": rule.name})
    return HttpResponseRedirect(_list_url(), status=303)


@never_cache
@owner_required
@require_http_methods(["GET"])
def runs(request, rule_id):
    rule = _rule_or_404(request, rule_id)
    rows = selectors.list_runs(widget=request.agent.widget, rule=rule)
    context = settings_context(request, area="automation", rule=rule, runs=rows, event_names=event_names())
    return render(request, "console/settings/automation/runs.html", context)


@never_cache
@owner_required
@require_http_methods(["GET", "POST"])
def delete(request, rule_id):
    widget = request.agent.widget
    rule = _rule_or_404(request, rule_id)
    if request.method == "GET":
        return render(
            request, "console/settings/automation/delete.html", settings_context(request, area="automation", rule=rule)
        )
    outcome = settings_forms.perform(lambda: services.delete_rule(widget=widget, rule=rule))
    if outcome.refused:  # no refusal is known for a delete; shown all the same rather than hidden
        messages.error(request, outcome.message)
    else:
        messages.success(request, _("Rule “%(name)s” deleted.") % {"name": rule.name})
    return HttpResponseRedirect(_list_url(), status=303)


def _form_page(request, form, *, rule, status=200):
    context = settings_context(request, area="automation", form=form, rule=rule)
    return render(request, "console/settings/automation/form.html", context, status=status)
