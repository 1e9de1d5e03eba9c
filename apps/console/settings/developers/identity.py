"""/console/settings/developers/identity/: identity verification, the owner's half of
`ChatWidget.setUser`. The page sets the widget setting `identity_verification` (the write of PATCH
/v1/widget/settings) and makes a new identity secret (the write of POST /v1/widget/identity-secret),
through the same widget services, so the refusals and the audit rows are the API's. The secret is in
the answer to the POST that made it and nowhere else (no redirect: nothing keeps it to show again)."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.shortcuts import render
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST

from apps.widget import selectors as widget_selectors
from apps.widget import services as widget_services

from .. import forms as settings_forms
from ..access import owner_required
from ..views import settings_context
from .views import see_other

MODES = (
    ("off", gettext_lazy("Off")),
    ("optional", gettext_lazy("Optional")),
    ("required", gettext_lazy("Required")),
)
# What each mode does, drawn under the choice (an option's text must stay short on a phone).
MODE_NOTES = (
    (gettext_lazy("Off"), gettext_lazy("The details a page gives are kept as unverified")),
    (gettext_lazy("Optional"), gettext_lazy("A signed id joins the person's one contact")),
    (gettext_lazy("Required"), gettext_lazy("A page that names someone must sign the id")),
)


class ModeForm(forms.Form):
    identity_verification = forms.ChoiceField(
        label=gettext_lazy("Identity verification"),
        choices=MODES,
        help_text=gettext_lazy(
            "Anonymous visitors chat in every mode. Turn it on once your site's server signs the ids."
        ),
    )


def page(request, *, status: int = 200, **extra):
    widget = request.agent.widget
    mode = widget_selectors.effective_settings(widget)["identity_verification"]
    context = {
        "mode_form": extra.pop("mode_form", None) or ModeForm(initial={"identity_verification": mode}),
        "secret_info": widget_selectors.identity_secret_info(widget),
        "mode": mode,
        "mode_notes": MODE_NOTES,
        **extra,
    }
    return render(
        request,
        "console/settings/developers/identity.html",
        settings_context(request, area="developers", **context),
        status=status,
    )


@never_cache
@owner_required
@require_GET
def index(request):
    return page(request)


@never_cache
@owner_required
@require_POST
def mode(request):
    form = ModeForm(request.POST)
    # The posted text goes to the settings service as sent: its refusal is the API's own words.
    value = request.POST.get("identity_verification", "")
    outcome = settings_forms.perform(
        lambda: widget_services.update_settings(widget=request.agent.widget, body={"identity_verification": value})
    )
    if outcome.refused:
        form.is_valid()
        form.errors.clear()
        settings_forms.bind(form, outcome)
        return page(request, mode_form=form, status=outcome.status)
    messages.success(request, _("Saved."))
    return see_other("console:settings:developers-identity")


@never_cache
@owner_required
@require_POST
def rotate(request):
    outcome = settings_forms.perform(lambda: widget_services.rotate_identity_secret(widget=request.agent.widget))
    secret, _created_at = outcome.value
    return page(request, new_secret=secret)
