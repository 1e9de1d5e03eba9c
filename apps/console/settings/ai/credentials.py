"""Provider credentials: connect, edit (rotate the key, repoint, retire, back up), delete, and the
"Test" button: a live call with exactly this credential's key and address (the provider's model list,
`GET /v1/ai/credentials/{id}/models`), so an owner learns at once whether the key and the address work.
Keys and signing secrets are write-only: no page ever draws them."""

from __future__ import annotations

from django.contrib import messages
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from apps.ai import selectors, services
from apps.ai.api import serializers as s
from apps.ai.models import Assistant, Credential
from apps.core.errors import AppError

from .. import forms as settings_forms
from ..access import owner_required
from ..views import settings_context
from .forms import PROVIDER_LABELS, CredentialForm
from .pages import api_context, widget_of

# The members the form draws; any other the API names (none today) goes above the form.
FORM_FIELDS = {name: name for name in CredentialForm.base_fields}


def _form(request, *, data=None, initial=None, credential=None):
    widget = widget_of(request)
    backups = Credential.objects.filter(widget=widget).order_by("-created_at", "-id")
    if credential is not None:
        backups = backups.exclude(pk=credential.pk)
    return CredentialForm(
        data,
        initial=initial,
        assistants=Assistant.objects.filter(widget=widget).order_by("name", "id"),
        operators=selectors.ai_operators(widget).order_by("name", "id"),
        backups=backups,
        editing=credential is not None,
    )


def _page(request, *, form, credential=None, status=200):
    payload = None
    if credential is not None:
        payload = selectors.credential_payload(credential, selectors.credential_map(widget_of(request)))
        payload["provider_label"] = PROVIDER_LABELS.get(credential.provider, credential.provider)
    return render(
        request,
        "console/settings/ai/credential.html",
        settings_context(request, area="ai", form=form, credential=payload),
        status=status,
    )


@never_cache
@owner_required
@require_http_methods(["GET", "POST"])
def credential_new(request):
    widget = widget_of(request)
    if request.method == "GET":
        return _page(request, form=_form(request, initial={"is_active": True, "provider": "openai"}))
    form = _form(request, data=request.POST)
    outcome = settings_forms.submit(
        s.CredentialInput,
        CredentialForm.api_data(request.POST, editing=False),
        lambda v: services.create_credential(widget=widget, data=dict(v)),
        context=api_context(request),
    )
    if outcome.refused:
        form.is_valid()
        settings_forms.bind(form, outcome, fields=FORM_FIELDS)
        return _page(request, form=form, status=outcome.status)
    messages.success(request, _("The provider is connected. Test it from the list."))
    return redirect("console:settings:ai")


@never_cache
@owner_required
@require_http_methods(["GET", "POST"])
def credential_edit(request, pk: int):
    widget = widget_of(request)
    credential = get_object_or_404(Credential, widget=widget, pk=pk)
    if request.method == "GET":
        payload = selectors.credential_payload(credential, selectors.credential_map(widget))
        initial = {
            **payload,
            "base_url": payload["base_url"] or "",
            "model": payload["model"] or "",
            "embedding_model": payload["embedding_model"] or "",
        }
        return _page(request, form=_form(request, initial=initial, credential=credential), credential=credential)
    form = _form(request, data=request.POST, credential=credential)
    outcome = settings_forms.submit(
        s.CredentialPatchInput,
        CredentialForm.api_data(request.POST, editing=True),
        lambda v: services.update_credential(widget=widget, credential=credential, changes=dict(v)),
        context={**api_context(request), "credential": credential},
        partial=True,
    )
    if outcome.refused:
        form.is_valid()
        settings_forms.bind(form, outcome, fields=FORM_FIELDS)
        return _page(request, form=form, credential=credential, status=outcome.status)
    messages.success(request, _("Saved."))
    return redirect("console:settings:ai")


@never_cache
@owner_required
@require_POST
def credential_delete(request, pk: int):
    widget = widget_of(request)
    credential = get_object_or_404(Credential, widget=widget, pk=pk)
    outcome = settings_forms.perform(lambda: services.delete_credential(widget=widget, credential=credential))
    if outcome.refused:
        messages.error(request, outcome.message)
        return redirect("console:settings:ai-credential", pk=credential.pk)
    messages.success(request, _("The credential is deleted."))
    return redirect("console:settings:ai")


def test_credential(widget, credential) -> settings_forms.Outcome:
    """The live check, outside any transaction: the provider may take up to 15 s."""
    try:
        models = services.list_credential_models(widget=widget, credential=credential)
    except AppError as err:
        outcome = settings_forms.refusal(err)
        outcome.value = err.extra
        return outcome
    return settings_forms.Outcome(value={"models": models, "count": len(models)})


@never_cache
@owner_required
@require_POST
def credential_test(request, pk: int):
    widget = widget_of(request)
    credential = get_object_or_404(Credential, widget=widget, pk=pk)
    outcome = test_credential(widget, credential)
    if request.headers.get("HX-Request"):
        # The test ran: its result, a success or the provider's refusal, is what the row shows.
        return render(
            request,
            "console/settings/ai/_credential_test.html",
            {"test": outcome, "credential": {"id": credential.pk, "model": credential.model}},
        )
    if outcome.refused:
        messages.error(request, _("The test failed: %(reason)s") % {"reason": outcome.message})
    else:
        messages.success(request, _("The provider answered: the key and the address work."))
    return redirect("console:settings:ai")
