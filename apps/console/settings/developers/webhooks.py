"""/console/settings/developers/webhooks/...: a webhook subscription's create, edit, delete, secret
rotation, its delivery log and redelivery: the API's serializers check the input and
`apps.webhooks.services` writes (the services the API's routes call), so a refusal reads as the API's.
A secret is shown once, on the answer to the POST that made it."""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404
from django.shortcuts import render
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST

from apps.platform.numbers import MAX_ID
from apps.webhooks import services as webhooks
from apps.webhooks.api import serializers as s
from apps.webhooks.models import Subscription

from .. import forms as settings_forms
from ..access import owner_required
from ..views import settings_context
from . import forms as f
from .views import event_lists, page, see_other

LOG_SIZE = 50

# An attempt's outcome (apps.webhooks.redelivery.OUTCOMES) in an owner's words.
REASONS = {
    "http_error": gettext_lazy("Your server answered with an error status."),
    "timeout": gettext_lazy("Your server did not answer in time."),
    "deadline_exceeded": gettext_lazy("The request took longer than 15 seconds."),
    "tls_error": gettext_lazy("The secure connection failed (certificate refused)."),
    "connection_error": gettext_lazy("The connection was refused or closed."),
    "resolve_failed": gettext_lazy("The address's host name does not resolve."),
    "invalid_response": gettext_lazy("The answer was not readable HTTP."),
    "response_too_large": gettext_lazy("The answer was larger than 64 KiB."),
    "request_failed": gettext_lazy("The request failed."),
    "blocked": gettext_lazy("The address is never called (a private network): no retry."),
    "missing_secret": gettext_lazy("The signing secret could not be read: no retry."),
}


def owned_subscription(request, subscription_id: int) -> Subscription:
    """The console widget's subscription; another widget's id is 404 like a missing one."""
    if not 0 < subscription_id <= MAX_ID:
        raise Http404
    found = Subscription.objects.filter(pk=subscription_id, widget=request.agent.widget).first()
    if found is None:
        raise Http404
    return found


def delivery_rows(subscription: Subscription) -> list[dict]:
    """The newest deliveries as the API's log reads them, with the last attempt's status and reason."""
    rows = []
    for row in webhooks.log_rows(subscription).order_by("-created_at", "-id")[:LOG_SIZE]:
        logged = webhooks.log_row(row, subscription)
        last = logged["attempt_log"][-1] if logged["attempt_log"] else None
        reason = REASONS.get(last["outcome"], "") if last else ""
        rows.append({**logged, "row": row, "last": last, "reason": reason})
    return rows


def edit_form(subscription: Subscription, data=None) -> f.SubscriptionForm:
    initial = {
        "url": subscription.url,
        "events": list(subscription.events),
        "is_active": subscription.is_active,
        "is_legacy_compat": subscription.is_legacy_compat,
    }
    return f.SubscriptionForm(data, initial=initial, editing=True)


def subscription_page(request, subscription: Subscription, *, status: int = 200, **extra):
    context = {
        "subscription": subscription,
        "form": extra.pop("form", None) or edit_form(subscription),
        "deliveries": delivery_rows(subscription),
        "log_size": LOG_SIZE,
        **extra,
    }
    context.update(event_lists(context["form"]))
    return render(
        request,
        "console/settings/developers/subscription.html",
        settings_context(request, area="developers", **context),
        status=status,
    )


def refused(form, outcome):
    settings_forms.bind(form, outcome, fields={})
    return outcome.status


def warn_not_live(request, subscription: Subscription) -> None:
    waiting = webhooks.not_live(list(subscription.events), legacy=subscription.is_legacy_compat)
    if waiting:
        text = _("Saved, but these events are not delivered on this server yet: %(names)s.")
        messages.warning(request, text % {"names": ", ".join(waiting)})


@never_cache
@owner_required
@require_POST
def create(request):
    widget = request.agent.widget
    data = f.subscription_data(request.POST, editing=False)
    outcome = settings_forms.submit(
        s.SubscriptionCreateInput, data, lambda v: webhooks.create_subscription(widget=widget, **v)
    )
    if outcome.refused:
        form = f.SubscriptionForm(request.POST)
        status = refused(form, outcome)
        return page(request, subscription_form=form, status=status)
    subscription, secret = outcome.value
    warn_not_live(request, subscription)
    return page(request, created_subscription=subscription, subscription_secret=secret)


@never_cache
@owner_required
@require_GET
def detail(request, subscription_id: int):
    return subscription_page(request, owned_subscription(request, subscription_id))


@never_cache
@owner_required
@require_POST
def edit(request, subscription_id: int):
    widget = request.agent.widget
    subscription = owned_subscription(request, subscription_id)
    data = f.subscription_data(request.POST, editing=True)
    outcome = settings_forms.submit(
        s.SubscriptionPatchInput,
        data,
        lambda v: webhooks.update_subscription(widget=widget, subscription=subscription, changes=dict(v)),
        partial=True,
    )
    if outcome.refused:
        form = edit_form(subscription, request.POST)
        status = refused(form, outcome)
        return subscription_page(request, subscription, form=form, status=status)
    messages.success(request, _("Saved."))
    warn_not_live(request, outcome.value)
    return see_other("console:settings:developers-subscription", subscription.pk)


@never_cache
@owner_required
@require_POST
def delete(request, subscription_id: int):
    subscription = owned_subscription(request, subscription_id)
    webhooks.delete_subscription(widget=request.agent.widget, subscription=subscription)
    messages.success(request, _("The subscription is deleted, with its delivery log."))
    return see_other("console:settings:developers")


@never_cache
@owner_required
@require_POST
def rotate(request, subscription_id: int):
    widget = request.agent.widget
    subscription = owned_subscription(request, subscription_id)
    outcome = settings_forms.submit(
        s.RotateSecretInput, {}, lambda v: webhooks.rotate_secret(widget=widget, subscription=subscription)
    )
    if outcome.refused:
        return subscription_page(request, subscription, rotate_errors=outcome.general, status=outcome.status)
    return subscription_page(request, subscription, new_secret=outcome.value)


@never_cache
@owner_required
@require_POST
def redeliver(request, subscription_id: int):
    widget = request.agent.widget
    subscription = owned_subscription(request, subscription_id)
    outcome = settings_forms.submit(
        s.RedeliverInput,
        {"delivery_id": request.POST.get("delivery_id", "")},
        lambda v: webhooks.redeliver(widget=widget, subscription=subscription, delivery_id=v["delivery_id"]),
    )
    if outcome.refused:
        problems = [m for messages_ in outcome.errors.values() for m in messages_] or [outcome.message]
        return subscription_page(request, subscription, redeliver_errors=problems, status=outcome.status)
    messages.success(request, _("Sent again as a new delivery; it appears in the log below."))
    return see_other("console:settings:developers-subscription", subscription.pk)
