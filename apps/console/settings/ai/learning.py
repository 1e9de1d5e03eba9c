"""Learning proposals: the owner's wishes with the provider's proposed rewrite, approved (with a
probation), rejected or reverted as `/v1/wishes/{id}/approve|reject|revert` do it, and the tuning
cycles' state (the control panel of `GET /v1/ai/learning/settings`)."""

from __future__ import annotations

from django.contrib import messages
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from apps.ai import selectors as ai_selectors
from apps.learning import selectors, services
from apps.learning.api import serializers as s
from apps.learning.models import Wish

from .. import forms as settings_forms
from ..access import owner_required
from ..views import settings_context
from .forms import ApproveForm
from .pages import api_context, widget_of

PAGE_SIZE = 50


def _context(request, **extra) -> dict:
    widget = widget_of(request)
    wishes = []
    for wish in Wish.objects.filter(widget=widget).select_related("assistant", "applied_version", "revert_version")[
        :PAGE_SIZE
    ]:
        wishes.append(
            {
                **selectors.wish_payload(wish),
                "assistant": wish.assistant.name,
                "preview": selectors.wish_preview(wish),
            }
        )
    wishes.sort(key=lambda w: w["created_at"], reverse=True)
    assistant = ai_selectors.effective_assistant(widget)
    return settings_context(
        request,
        area="ai",
        wishes=wishes,
        panel=selectors.control_panel(widget, assistant),
        approve_form=extra.pop("approve_form", None) or ApproveForm(),
        **extra,
    )


@never_cache
@owner_required
@require_http_methods(["GET", "POST"])
def wishes(request):
    status = 200
    extra = {}
    if request.method == "POST":
        widget = widget_of(request)
        text = request.POST.get("text", "")
        outcome = settings_forms.submit(
            s.WishInput,
            {"text": text},
            lambda v: services.submit_wish(
                widget=widget, assistant=ai_selectors.effective_assistant(widget), text=v["text"], token_id=None
            ),
            context=api_context(request),
        )
        if not outcome.refused:
            messages.success(request, _("Your wish is sent: the provider proposes a rewrite in a moment."))
            return redirect("console:settings:ai-learning")
        extra = {"wish_refusal": outcome, "wish_text": text}
        status = outcome.status
    return render(request, "console/settings/ai/learning.html", _context(request, **extra), status=status)


@never_cache
@owner_required
@require_POST
def wish_approve(request, pk: int):
    widget = widget_of(request)
    wish = get_object_or_404(Wish, widget=widget, pk=pk)
    form = ApproveForm(request.POST)
    outcome = settings_forms.submit(
        s.ApproveInput,
        ApproveForm.api_data(request.POST),
        lambda v: services.approve_wish(
            widget=widget, wish=wish, probation_hours=v["probation_hours"], note=v.get("note", ""), token_id=None
        ),
        context=api_context(request),
    )
    if outcome.refused:
        form.is_valid()
        settings_forms.bind(form, outcome)
        return render(
            request,
            "console/settings/ai/learning.html",
            _context(request, approve_form=form, refused_wish=wish.pk),
            status=outcome.status,
        )
    messages.success(request, _("Approved: the new persona is live, on probation."))
    return redirect("console:settings:ai-learning")


def _simple(request, pk: int, service, done: str):
    widget = widget_of(request)
    wish = get_object_or_404(Wish, widget=widget, pk=pk)
    outcome = settings_forms.perform(lambda: service(widget=widget, wish=wish, token_id=None))
    if outcome.refused:
        return render(
            request,
            "console/settings/ai/learning.html",
            _context(request, decision_refusal=outcome, refused_wish=wish.pk),
            status=outcome.status,
        )
    messages.success(request, done)
    return redirect("console:settings:ai-learning")


@never_cache
@owner_required
@require_POST
def wish_reject(request, pk: int):
    return _simple(request, pk, services.reject_wish, _("Rejected: nothing changed."))


@never_cache
@owner_required
@require_POST
def wish_revert(request, pk: int):
    return _simple(request, pk, services.revert_wish, _("Reverted: the earlier persona is live again."))
