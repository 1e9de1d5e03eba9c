"""/console/settings/ai/: the AI operator's front page (the switch and settings, the AI operators, the
assistants, the credentials) and the writes of the settings and the AI operators."""

from __future__ import annotations

from django.contrib import messages
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from apps.ai import selectors, services
from apps.ai.api import serializers as s
from apps.ai.models import Assistant, Credential
from apps.learning.models import Wish

from .. import forms as settings_forms
from ..access import owner_required
from ..views import settings_context
from .forms import PROVIDER_LABELS, OperatorForm, SettingsForm

api_context = settings_forms.api_context


def widget_of(request):
    return request.agent.widget


def credential_rows(widget) -> list[dict]:
    by_id = selectors.credential_map(widget)
    names = {a.pk: a.name for a in Assistant.objects.filter(widget=widget)}
    operators = {o.pk: o.name for o in selectors.ai_operators(widget)}
    rows = []
    for credential in Credential.objects.filter(widget=widget).order_by("-created_at", "-id"):
        payload = selectors.credential_payload(credential, by_id)
        payload["provider_label"] = PROVIDER_LABELS.get(credential.provider, credential.provider)
        payload["serves"] = names.get(payload["assistant_id"]) or operators.get(payload["operator_id"])
        rows.append(payload)
    return rows


def front_context(request, **extra) -> dict:
    widget = widget_of(request)
    assistants = list(Assistant.objects.filter(widget=widget).order_by("-is_default", "name", "id"))
    names = {a.pk: a.name for a in assistants}
    operators = [
        {**selectors.operator_payload(o), "assistant": names.get(o.ai_assistant_id)}
        for o in selectors.ai_operators(widget).order_by("-created_at", "-id")
    ]
    row = selectors.get_settings(widget)
    settings_form = extra.pop("settings_form", None) or SettingsForm(
        initial={name: getattr(row, name) for name in (*SettingsForm.FLAGS, "autonomous_tuning_enabled")}
        | {"takeover_timeout_sec": row.takeover_timeout_sec}
    )
    return settings_context(
        request,
        area="ai",
        ai=selectors.settings_payload(widget),
        answers_visitors=selectors.answers_visitors(widget),
        settings_form=settings_form,
        operators=operators,
        operator_form=extra.pop("operator_form", None) or OperatorForm(assistants=assistants),
        assistants=assistants,
        templates=services.template_listing(category=None, locale=template_locale(request)),
        credentials=credential_rows(widget),
        pending_wishes=Wish.objects.filter(widget=widget, status=Wish.Status.PROPOSED).count(),
        **extra,
    )


def template_locale(request) -> str:
    return "ru" if (getattr(request, "LANGUAGE_CODE", "") or "").startswith("ru") else "en"


@never_cache
@owner_required
@require_GET
def index(request):
    return render(request, "console/settings/ai/index.html", front_context(request))


@never_cache
@owner_required
@require_POST
def save_settings(request):
    form = SettingsForm(request.POST)
    widget = widget_of(request)
    outcome = settings_forms.submit(
        s.SettingsPatchInput,
        form.api_data(request.POST),
        lambda v: services.update_settings(widget=widget, changes=dict(v)),
        context=api_context(request),
    )
    if outcome.refused:
        form.is_valid()
        settings_forms.bind(form, outcome)
        return render(
            request, "console/settings/ai/index.html", front_context(request, settings_form=form), status=outcome.status
        )
    messages.success(request, _("Saved."))
    return redirect("console:settings:ai")


@never_cache
@owner_required
@require_POST
def operator_new(request):
    widget = widget_of(request)
    assistants = Assistant.objects.filter(widget=widget)
    form = OperatorForm(request.POST, assistants=assistants)
    outcome = settings_forms.submit(
        s.OperatorInput,
        OperatorForm.api_data(request.POST),
        lambda v: services.create_operator(widget=widget, **v),
        context=api_context(request),
    )
    if outcome.refused:
        form.is_valid()
        settings_forms.bind(form, outcome)
        return render(
            request, "console/settings/ai/index.html", front_context(request, operator_form=form), status=outcome.status
        )
    messages.success(request, _("The AI operator %(name)s is ready.") % {"name": outcome.value.name})
    return redirect("console:settings:ai")


@never_cache
@owner_required
@require_http_methods(["GET", "POST"])
def operator_edit(request, pk: int):
    widget = widget_of(request)
    operator = get_object_or_404(selectors.ai_operators(widget), pk=pk)
    assistants = Assistant.objects.filter(widget=widget)
    payload = selectors.operator_payload(operator)
    status = 200
    if request.method == "POST":
        form = OperatorForm(request.POST, assistants=assistants)
        data = OperatorForm.api_data(request.POST)
        data["name"] = request.POST.get("name", "")
        outcome = settings_forms.submit(
            s.OperatorInput,
            data,
            lambda v: services.update_operator(widget=widget, operator=operator, changes=dict(v)),
            context=api_context(request),
            partial=True,
        )
        if not outcome.refused:
            messages.success(request, _("Saved."))
            return redirect("console:settings:ai")
        form.is_valid()
        settings_forms.bind(form, outcome)
        status = outcome.status
    else:
        form = OperatorForm(initial=payload, assistants=assistants)
    return render(
        request,
        "console/settings/ai/operator.html",
        settings_context(request, area="ai", operator=payload, form=form),
        status=status,
    )
