"""The operator's Notifications section: allow push on this device (console/push.js subscribes with
the server's VAPID public key and posts the browser's subscription here), choose per device what to
be told and whether the words of a message show, remove a device. Writes go through apps.push's
services; every device is the operator's own (another's id is a 404 like a missing one). Without
VAPID keys the page says push is not configured and offers nothing."""

from __future__ import annotations

import hashlib
import json

from django.conf import settings
from django.contrib import messages
from django.http import Http404, HttpResponseRedirect, JsonResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST

from apps.core.errors import AppError, ValidationFailed, problem_response
from apps.push import notify, selectors, services

from .access import operator_required
from .views import page_context, parse_id

# The choices of a device, each with what its notification says (apps.push.notify's titles: the
# same words, so the catalogue translates both).
CHOICES = (
    ("assigned", gettext_lazy("A chat is assigned to me"), gettext_lazy("A chat was assigned to you")),
    ("queue", gettext_lazy("A visitor starts waiting in the queue"), gettext_lazy("A visitor is waiting in the queue")),
    ("mention", gettext_lazy("Someone mentions me in a note"), gettext_lazy("You were mentioned in a note")),
    (
        "sla",
        gettext_lazy("A chat of mine is about to miss its response time"),
        gettext_lazy("A chat is about to miss its response time"),
    ),
)
# What a notification without previews says instead of the message (apps.push.notify).
NO_PREVIEW = gettext_lazy("Open the console to read it.")
SUBSCRIPTION_BYTES = 4096


def device_key(endpoint: str) -> str:
    """What the page tells the script about a device, so it can find its own row: a digest, never
    the push service's endpoint (a capability URL)."""
    return hashlib.sha256(endpoint.encode()).hexdigest()[:32]


def _device(request, device_id: str):
    agent = request.agent
    device = selectors.get_device(agent.widget, agent_id=agent.pk, subscription_id=parse_id(device_id))
    if device is None:
        raise Http404("No such device.")
    return device


def _back() -> HttpResponseRedirect:
    return HttpResponseRedirect(reverse("console:notifications"), status=303)


@never_cache
@require_GET
@operator_required
def notifications(request):
    agent = request.agent
    devices = [
        {
            "row": row,
            "key": device_key(row.endpoint),
            "choices": [(name, label, getattr(row, name)) for name, label, _ in CHOICES],
        }
        for row in selectors.list_devices(agent.widget, agent_id=agent.pk)
    ]
    return render(
        request,
        "console/notifications.html",
        page_context(
            request,
            notifications_page=True,
            configured=notify.configured(),
            public_key=settings.VAPID_PUBLIC_KEY,
            devices=devices,
            choices=CHOICES,
            no_preview=NO_PREVIEW,
        ),
    )


@require_POST
@operator_required
def subscribe(request):
    """JSON in (the browser's PushSubscription), JSON out: 201 `{"id"}`, or problem+json."""
    if not notify.configured():
        raise Http404("Push notifications are not configured.")
    try:
        if len(request.body) > SUBSCRIPTION_BYTES:
            raise ValidationFailed(errors={"endpoint": ["The subscription is too large."]})
        try:
            data = json.loads(request.body or b"null")
        except ValueError:
            raise ValidationFailed(
                errors={"endpoint": ["The body must be the browser's subscription as JSON."]}
            ) from None
        device = services.subscribe_device(
            agent=request.agent,
            data=data,
            user_agent=request.headers.get("User-Agent", ""),
            language=getattr(request, "LANGUAGE_CODE", settings.LANGUAGE_CODE),
        )
    except AppError as err:
        return problem_response(err, request)
    return JsonResponse({"id": device.pk, "key": device_key(device.endpoint)}, status=201)


@require_POST
@operator_required
def choose(request, device_id: str):
    """The device's checkboxes: a box left unticked is off."""
    device = _device(request, device_id)
    choices = {name: name in request.POST for name in (*(name for name, _, _ in CHOICES), "previews")}
    services.set_choices(subscription=device, choices=choices)
    messages.success(request, _("Saved."))
    return _back()


@require_POST
@operator_required
def remove(request, device_id: str):
    services.remove_device(subscription=_device(request, device_id))
    messages.success(request, _("The device was removed. It gets no more notifications."))
    return _back()
