"""/console/settings/ai/knowledge/rules/...: the rules written by hand, as POST, PATCH and DELETE
/v1/kb/rules make them. A rule's text is embedded before the write, in one of the widget's
provider-wait slots and under the request path's embedding deadline, as the API route does: a
provider failure stores nothing and shows the API's 502 detail."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from apps.core import provider_waits
from apps.core.errors import AppError
from apps.kb import selectors, services
from apps.kb.api import serializers as s
from apps.kb.models import KbChunk

from .. import forms as settings_forms
from ..access import owner_required
from ..views import settings_context
from .kb_forms import RuleForm
from .kb_views import AREA, page_url, render_page


def _embed(widget, content: str):
    with provider_waits.wait(widget.pk, seconds=settings.AI_REQUEST_EMBED_DEADLINE_SECONDS):
        return services.embed_texts(widget=widget, texts=[content])


def create_rule(widget, body: dict) -> settings_forms.Outcome:
    validated, refused = settings_forms.validate(s.RuleInput, body)
    if refused is not None:
        return refused
    try:
        embedded = _embed(widget, validated["content"])
    except AppError as err:
        return settings_forms.refusal(err)
    return settings_forms.perform(
        lambda: services.create_rule(
            widget=widget, content=validated["content"], doc_id=validated.get("doc_id"), embedded=embedded
        )
    )


def update_rule(widget, rule: KbChunk, body: dict) -> settings_forms.Outcome:
    validated, refused = settings_forms.validate(s.RuleInput, body, partial=True)
    if refused is not None:
        return refused
    embedded = None
    if "content" in validated and validated["content"] != rule.content:
        try:
            embedded = _embed(widget, validated["content"])
        except AppError as err:
            return settings_forms.refusal(err)
    return settings_forms.perform(
        lambda: services.update_rule(widget=widget, rule=rule, changes=dict(validated), embedded=embedded)
    )


@never_cache
@owner_required
@require_POST
def create(request):
    form = RuleForm(request.POST)
    outcome = create_rule(request.agent.widget, form.api_data(partial=False))
    if outcome.refused:
        form.is_valid()
        settings_forms.bind(form, outcome)
        return render_page(request, status=outcome.status, rule_form=form)
    messages.success(request, _("Rule added. It is searchable now."))
    return redirect(page_url("rules"))


def _rule(request, pk: int) -> KbChunk:
    return get_object_or_404(selectors.rules(request.agent.widget), pk=pk)


def _rule_page(request, rule: KbChunk, form: RuleForm, status: int = 200):
    return render(
        request,
        "console/settings/ai/knowledge_rule.html",
        settings_context(request, area=AREA, rule=selectors.rule_payload(rule), form=form),
        status=status,
    )


@never_cache
@owner_required
@require_http_methods(["GET", "POST"])
def edit(request, pk: int):
    rule = _rule(request, pk)
    if request.method == "GET":
        return _rule_page(request, rule, RuleForm(initial={"content": rule.content, "doc_id": rule.doc_id or ""}))
    form = RuleForm(request.POST)
    outcome = update_rule(request.agent.widget, rule, form.api_data(partial=True))
    if outcome.refused:
        form.is_valid()
        settings_forms.bind(form, outcome)
        return _rule_page(request, rule, form, status=outcome.status)
    messages.success(request, _("Saved."))
    return redirect(page_url("rules"))


@never_cache
@owner_required
@require_http_methods(["GET", "POST"])
def delete(request, pk: int):
    """GET: the rule to delete; POST: DELETE /v1/kb/rules/{id}."""
    rule = _rule(request, pk)
    if request.method == "POST":
        settings_forms.perform(lambda: services.delete_rule(widget=request.agent.widget, rule=rule))
        messages.success(request, _("Rule deleted."))
        return redirect(page_url("rules"))
    return render(
        request,
        "console/settings/ai/knowledge_confirm.html",
        settings_context(request, area=AREA, confirm="rule", rule=selectors.rule_payload(rule)),
    )
