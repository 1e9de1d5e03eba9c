"""/console/settings/channels/custom/...: the widget's own channels (an app of yours that brings
messages in through the API and takes the operators' replies at its URL). Create validates with
the registration route's serializer (`POST /v1/channels`) and answers the signing secret once; an
edit takes the same rules for the name and the URL. Every write is audited by the services."""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404
from django.shortcuts import render
from django.utils.translation import gettext as _
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST

from apps.channels import services
from apps.channels.api import serializers as s
from apps.channels.models import CustomChannel
from apps.platform.numbers import MAX_ID

from .. import forms as settings_forms
from ..access import owner_required
from ..views import settings_context
from .views import CUSTOM, CUSTOM_FIELDS, inputs, page, refusal_page, see_other


def owned_channel(request, channel_id: int) -> CustomChannel:
    """The console widget's channel; another widget's id is 404 like a missing one."""
    if not 0 < channel_id <= MAX_ID:
        raise Http404
    found = CustomChannel.objects.filter(pk=channel_id, widget=request.agent.widget).first()
    if found is None:
        raise Http404
    return found


def posted(request) -> dict:
    return {name: request.POST[name] for name in ("name", "url") if name in request.POST}


@never_cache
@owner_required
@require_POST
def create(request):
    widget = request.agent.widget
    data = posted(request)
    outcome = settings_forms.submit(
        s.ChannelCreateInput, data, lambda v: services.register_custom_channel(widget=widget, **v)
    )
    if outcome.refused:
        return refusal_page(request, CUSTOM, outcome, data)
    channel, secret = outcome.value
    return page(request, created_channel=channel, channel_secret=secret)


def channel_page(request, channel: CustomChannel, *, status: int = 200, refused: dict | None = None):
    shown = refused or {
        "where": CUSTOM,
        "general": [],
        "errors": {},
        "posted": {"name": channel.name, "url": channel.url},
    }
    context = {"channel": channel, "form": inputs(CUSTOM, CUSTOM_FIELDS, shown)}
    return render(
        request,
        "console/settings/channels/custom.html",
        settings_context(request, area="channels", **context),
        status=status,
    )


@never_cache
@owner_required
@require_GET
def detail(request, channel_id: int):
    return channel_page(request, owned_channel(request, channel_id))


@never_cache
@owner_required
@require_POST
def edit(request, channel_id: int):
    widget = request.agent.widget
    channel = owned_channel(request, channel_id)
    data = posted(request)
    outcome = settings_forms.submit(
        s.ChannelCreateInput,
        data,
        lambda v: services.update_custom_channel(widget=widget, channel=channel, changes=dict(v)),
    )
    if outcome.refused:
        refused = {"where": CUSTOM, "general": outcome.general, "errors": outcome.errors, "posted": data}
        return channel_page(request, channel, refused=refused, status=outcome.status)
    messages.success(request, _("Saved."))
    return see_other("console:settings:channels-custom", channel.pk)


@never_cache
@owner_required
@require_POST
def switch(request, channel_id: int):
    channel = owned_channel(request, channel_id)
    active = request.POST.get("is_active") == "on"
    services.set_custom_channel_active(widget=request.agent.widget, channel=channel, is_active=active)
    if active:
        messages.success(request, _("The channel %(name)s is on.") % {"name": channel.name})
    else:
        messages.success(
            request, _("The channel %(name)s is off: it takes and sends nothing.") % {"name": channel.name}
        )
    return see_other("console:settings:channels")


@never_cache
@owner_required
@require_POST
def delete(request, channel_id: int):
    channel = owned_channel(request, channel_id)
    services.delete_custom_channel(widget=request.agent.widget, channel=channel)
    messages.success(request, _("The channel %(name)s is deleted.") % {"name": channel.name})
    return see_other("console:settings:channels")
