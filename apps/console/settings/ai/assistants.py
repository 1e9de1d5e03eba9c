"""The assistants: create (blank or from a marketplace template), edit, delete, and the detached test
(the AI operator's real pipeline on a question, without a chat), as `POST /v1/ai/assistants/{id}/test`
runs it."""

from __future__ import annotations

import uuid

from asgiref.sync import sync_to_async
from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from apps.ai import selectors, services
from apps.ai.api import serializers as s
from apps.ai.models import Assistant
from apps.core.errors import AppError

from .. import forms as settings_forms
from ..access import owner_required
from ..views import settings_context
from .forms import AssistantForm, TestForm
from .pages import api_context, front_context, template_locale, widget_of


def _page(request, *, form, assistant=None, status=200, **extra):
    return render(
        request,
        "console/settings/ai/assistant.html",
        settings_context(
            request,
            area="ai",
            form=form,
            assistant=assistant,
            operators=[o.name for o in selectors.running_operators(widget_of(request), assistant)] if assistant else [],
            **extra,
        ),
        status=status,
    )


@never_cache
@owner_required
@require_http_methods(["GET", "POST"])
def assistant_new(request):
    widget = widget_of(request)
    if request.method == "GET":
        return _page(request, form=AssistantForm(initial={"enabled": True}))
    form = AssistantForm(request.POST)
    outcome = settings_forms.submit(
        s.AssistantInput,
        AssistantForm.api_data(request.POST),
        lambda v: services.create_assistant(widget=widget, fields=dict(v)),
        context=api_context(request),
    )
    if outcome.refused:
        form.is_valid()
        settings_forms.bind(form, outcome)
        return _page(request, form=form, status=outcome.status)
    messages.success(request, _("The assistant %(name)s is created.") % {"name": outcome.value.name})
    return redirect("console:settings:ai-assistant", pk=outcome.value.pk)


@never_cache
@owner_required
@require_http_methods(["GET", "POST"])
def assistant_edit(request, pk: int):
    widget = widget_of(request)
    assistant = get_object_or_404(Assistant, widget=widget, pk=pk)
    if request.method == "GET":
        initial = AssistantForm.initial_of(selectors.assistant_payload(assistant))
        return _page(request, form=AssistantForm(initial=initial), assistant=assistant, test_form=TestForm())
    form = AssistantForm(request.POST)
    outcome = settings_forms.submit(
        s.AssistantInput,
        AssistantForm.api_data(request.POST),
        lambda v: services.update_assistant(widget=widget, assistant=assistant, changes=dict(v)),
        context=api_context(request),
        partial=True,
    )
    if outcome.refused:
        form.is_valid()
        settings_forms.bind(form, outcome)
        return _page(request, form=form, assistant=assistant, status=outcome.status, test_form=TestForm())
    messages.success(request, _("Saved."))
    return redirect("console:settings:ai-assistant", pk=assistant.pk)


@never_cache
@owner_required
@require_POST
def assistant_delete(request, pk: int):
    widget = widget_of(request)
    assistant = get_object_or_404(Assistant, widget=widget, pk=pk)
    outcome = settings_forms.perform(lambda: services.delete_assistant(widget=widget, assistant=assistant))
    if outcome.refused:
        initial = AssistantForm.initial_of(selectors.assistant_payload(assistant))
        return _page(
            request,
            form=AssistantForm(initial=initial),
            assistant=assistant,
            status=outcome.status,
            test_form=TestForm(),
            delete_refusal=outcome,
        )
    messages.success(request, _("The assistant %(name)s is deleted.") % {"name": assistant.name})
    return redirect("console:settings:ai")


@never_cache
@owner_required
@require_POST
def template_apply(request):
    widget = widget_of(request)
    slug = request.POST.get("template", "")
    if slug not in {t["slug"] for t in services.template_listing(category=None, locale="en")}:
        messages.error(request, _("Choose one of the templates."))
        return redirect("console:settings:ai")
    outcome = settings_forms.perform(
        lambda: services.apply_template(widget=widget, slug=slug, locale=template_locale(request))
    )
    if outcome.refused:
        return render(
            request,
            "console/settings/ai/index.html",
            front_context(request, template_refusal=outcome),
            status=outcome.status,
        )
    messages.success(request, _("The assistant %(name)s is created from the template.") % {"name": outcome.value.name})
    return redirect("console:settings:ai-assistant", pk=outcome.value.pk)


# --- the detached test ------------------------------------------------------------------------------------


class _Prepared(HttpResponse):
    """Not sent: carries the prepared test (or the refusal to show) from the synchronous phase."""

    def __init__(self, *, plan=None, outcome=None, form=None):
        super().__init__(status=204)
        self.plan, self.outcome, self.form = plan, outcome, form


@owner_required
@require_POST
def _prepare(request, pk: int):
    widget = widget_of(request)
    assistant = get_object_or_404(Assistant, widget=widget, pk=pk)
    form = TestForm(request.POST)
    if not form.is_valid():
        return _Prepared(form=form, outcome=settings_forms.Outcome(refused=True, status=422))
    data = services.DetachedTestInput(
        question=form.cleaned_data["question"], operators=form.cleaned_data["operators"] or None
    )
    try:
        # A new key per test: the detached test's idempotency claim admits it once (1 in flight, 10 a minute).
        plan = services.prepare_detached_test(
            widget, assistant_id=assistant.pk, data=data, key=f"console-{uuid.uuid4().hex}", path=request.path
        )
    except AppError as err:
        return _Prepared(form=form, outcome=settings_forms.refusal(err))
    return _Prepared(plan=plan, form=form)


def _finish(plan, status: int) -> None:
    services.record_detached_result(plan.row, status)
    services.release_detached_slot(plan.widget, plan.slot)


@owner_required
def _render_test(request, pk: int, *, form, outcome):
    widget = widget_of(request)
    assistant = get_object_or_404(Assistant, widget=widget, pk=pk)
    context = {"test_form": form, "test": outcome, "assistant": assistant}
    if request.headers.get("HX-Request"):
        # The test ran (or was refused): its result is the answer to show, whatever it says.
        return render(request, "console/settings/ai/_test_result.html", settings_context(request, area="ai", **context))
    initial = AssistantForm.initial_of(selectors.assistant_payload(assistant))
    status = outcome.status if outcome.refused else 200
    return _page(request, form=AssistantForm(initial=initial), status=status, **context)


@never_cache
async def assistant_test(request, pk: int):
    """An async view, as the API's: the provider's answer (up to 45 s) is awaited on the event loop,
    not in a web thread; the owner check, the admission and the rendering run in short thread hops."""
    prepared = await sync_to_async(_prepare)(request, pk)
    if not isinstance(prepared, _Prepared):
        return prepared  # the 403, 404 or 405 page
    outcome = prepared.outcome
    if prepared.plan is not None:
        plan = prepared.plan
        status = 500
        try:
            completion = await services.run_detached_provider(plan)
            outcome = settings_forms.Outcome(value=services.detached_result(plan, completion))
            status = 200
        except services.ProviderError as exc:
            outcome = settings_forms.refusal(services.detached_provider_error(exc))
            status = outcome.status
        finally:
            await sync_to_async(_finish)(plan, status)
    return await sync_to_async(_render_test)(request, pk, form=prepared.form, outcome=outcome)
