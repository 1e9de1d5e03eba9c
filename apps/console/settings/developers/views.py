"""/console/settings/developers/: the API switch, API tokens (issued with scopes and an expiry, the
plaintext shown once on the answer to the POST that made it, never again), and the webhook
subscriptions' list (their pages: webhooks.py).

Tokens have no API route (the contract leaves issuing them to the cabinet): the page writes through
`apps.core.services.issue_token` / `revoke_token`, the services `manage.py issue_token` and Django
admin use, audited with the owner as the actor."""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext as _
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST

from apps.core import services as core
from apps.core.models import ApiToken
from apps.platform.numbers import MAX_ID
from apps.webhooks import services as webhooks
from apps.webhooks.models import Subscription

from ..access import owner_required
from ..views import settings_context
from . import forms as f


def token_rows(widget) -> list[dict]:
    now = timezone.now()
    rows = []
    for token in ApiToken.objects.filter(widget=widget).order_by("-created_at", "-id"):
        if token.revoked_at:
            state = "revoked"
        elif token.is_expired(now):
            state = "expired"
        else:
            state = "active"
        rows.append({"token": token, "state": state, "scope_count": len(token.scopes)})
    return rows


def event_lists(form) -> dict:
    """What a subscription form's event checkboxes draw: the names, and those ticked."""
    return {
        "native_events": webhooks.event_names(legacy=False),
        "legacy_events": webhooks.event_names(legacy=True),
        "checked_events": set(form["events"].value() or []),
    }


def page(request, *, status: int = 200, **extra):
    widget = request.agent.widget
    context = {
        "switch_form": f.ApiSwitchForm(initial={"api_enabled": widget.api_enabled}),
        "token_form": f.TokenForm(),
        "subscription_form": f.SubscriptionForm(initial={"events": []}),
        "scope_groups": f.scope_groups(),
        "presets": [(name, f.preset_scopes(name)) for name in f.PRESETS],
        "tokens": token_rows(widget),
        "subscriptions": Subscription.objects.filter(widget=widget).order_by("-created_at", "-id"),
        **extra,
    }
    context.update(event_lists(context["subscription_form"]))
    context["checked_scopes"] = set(context["token_form"]["scopes"].value() or [])
    return render(
        request,
        "console/settings/developers/index.html",
        settings_context(request, area="developers", **context),
        status=status,
    )


def see_other(name: str, *args) -> HttpResponseRedirect:
    """Post/redirect/get: the answer to a successful write."""
    response = HttpResponseRedirect(reverse(name, args=args))
    response.status_code = 303
    return response


@never_cache
@owner_required
@require_GET
def index(request):
    return page(request)


@never_cache
@owner_required
@require_POST
def api_switch(request):
    form = f.ApiSwitchForm(request.POST)
    form.is_valid()  # a checkbox: absent is off
    enabled = bool(form.cleaned_data.get("api_enabled"))
    core.update_widget(widget=request.agent.widget, changes={"api_enabled": enabled})
    messages.success(request, _("API access is on.") if enabled else _("API access is off."))
    return see_other("console:settings:developers")


@never_cache
@owner_required
@require_POST
def issue(request):
    """The plaintext is in this answer only (no redirect: nothing keeps it to show it again)."""
    form = f.TokenForm(request.POST)
    if not form.is_valid():
        return page(request, token_form=form, status=422)
    days = form.cleaned_data.get("expires_in_days")
    try:
        issued = core.issue_token(
            widget=request.agent.widget,
            scopes=form.cleaned_data["chosen_scopes"],
            name=form.cleaned_data.get("name") or "",
            expires_in=days * 86400 if days else None,
        )
    except ValueError as err:  # the service's own rules (an unknown scope, none at all)
        form.add_error(None, str(err))
        return page(request, token_form=form, status=422)
    return page(request, issued=issued)


def owned_token(request, token_id: int) -> ApiToken:
    if not 0 < token_id <= MAX_ID:
        raise Http404
    token = ApiToken.objects.filter(pk=token_id, widget=request.agent.widget).first()
    if token is None:
        raise Http404
    return token


@never_cache
@owner_required
@require_POST
def revoke(request, token_id: int):
    token = owned_token(request, token_id)
    core.revoke_token(token=token)
    done = _("The token %(prefix)s is revoked: it is refused from now on.")
    messages.success(request, done % {"prefix": token.prefix})
    return see_other("console:settings:developers")
