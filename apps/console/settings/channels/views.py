"""/console/settings/channels/: messengers (connect, check again, disconnect; VK through its
communities) and custom channels (create with the secret shown once, edit, switch on or off, delete),
each with its state: connected, failing with the last error, or not connected / off.

Every write validates with the API route's serializer and goes through the route's service
(`apps.channels.services`), so the page refuses what the API refuses, in its words. Credentials are
write-only: a page never shows one, not even back in a refused form."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.http import Http404, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST

from apps.channels import selectors, services
from apps.channels.api import serializers as s
from apps.channels.models import CustomChannel, VkCommunity
from apps.core.errors import AppError
from apps.platform.numbers import MAX_ID

from .. import forms as settings_forms
from ..access import owner_required
from ..views import settings_context

# The providers by the names an owner knows them (the API's codes in brackets on the page).
NAMES = {
    "tg": "Telegram",
    "vk": "VK",
    "wa": "WhatsApp",
    "vb": "Viber",
    "fb": "Facebook Messenger",
    "ok": "OK.ru",
    "mx": "Max",
    "cian": "Cian",
    "ali": "AliExpress",
    "apple": "Apple Messages for Business",
    "custom": gettext_lazy("Your own channels"),
}
FIELD_LABELS = {
    "token": gettext_lazy("Access token"),
    "sid": gettext_lazy("Account id"),
    "url": gettext_lazy("Gateway URL"),
}
CUSTOM = "custom"
VK = "vk"


def base_url(request) -> str:
    """Where providers call our hooks: the deployment's public address, else this request's."""
    return settings.PUBLIC_BASE_URL or request.build_absolute_uri("/")


def see_other(name: str, *args) -> HttpResponseRedirect:
    response = HttpResponseRedirect(reverse(name, args=args))
    response.status_code = 303
    return response


def call(action) -> settings_forms.Outcome:
    """A service call that reaches a provider: no transaction is held around it (the service opens
    its own); its AppError is the refusal."""
    try:
        return settings_forms.Outcome(value=action())
    except AppError as err:
        return settings_forms.refusal(err)


def messenger_rows(widget) -> list[dict]:
    rows = []
    for row in selectors.messenger_rows(widget):
        if not row["connected"]:
            state = "off"
        elif row["webhook_status"] == "failed":
            state = "failing"
        else:
            state = "on"
        rows.append({**row, "name": NAMES.get(row["provider"], row["provider"]), "state": state})
    return rows


def channel_state(channel: CustomChannel) -> str:
    if not channel.is_active:
        return "inactive"
    return "failing" if channel.last_status == "failed" else "on"


VK_FIELDS = {"token": gettext_lazy("Community access token"), "community": gettext_lazy("Community")}
CUSTOM_FIELDS = {"name": gettext_lazy("Name"), "url": gettext_lazy("URL for the operators' replies")}


def inputs(form: str, labels: dict, refused: dict | None) -> dict:
    """One form's inputs with the refusal's messages under them (when the refusal is this form's)
    and the values posted back (never a credential: those are not in `posted`)."""
    mine = refused if refused is not None and refused["where"] == form else None
    errors = mine["errors"] if mine else {}
    shown = [
        {
            "name": name,
            "id": f"{form}-{name}",
            "label": label,
            "errors": errors.get(name, []),
            "value": (mine or {}).get("posted", {}).get(name, ""),
            "secret": name == "token",
        }
        for name, label in labels.items()
    ]
    general = list(mine["general"]) if mine else []
    general += [f"{key}: {m}" for key, found in errors.items() if key not in labels and key != "body" for m in found]
    return {"inputs": shown, "general": general, "open": mine is not None}


def page(request, *, status: int = 200, refused: dict | None = None, **extra):
    widget = request.agent.widget
    channels = selectors.custom_channels_with_state(widget)
    rows = messenger_rows(widget)
    for row in rows:
        labels = {name: FIELD_LABELS[name] for name in row["fields"]}
        row["form"] = inputs(row["provider"], labels, refused)
    context = {
        "messengers": rows,
        "vk_form": inputs(VK, VK_FIELDS, refused),
        "custom_form": inputs(CUSTOM, CUSTOM_FIELDS, refused),
        "communities": VkCommunity.objects.filter(widget=widget).order_by("-is_primary", "created_at", "pk"),
        "channels": [{"channel": c, "state": channel_state(c)} for c in channels],
        **extra,
    }
    return render(
        request,
        "console/settings/channels/index.html",
        settings_context(request, area="channels", **context),
        status=status,
    )


def refusal_page(request, where: str, outcome, posted: dict | None = None):
    """The page again with the refusal under the form `where` names; nothing changed."""
    if outcome.status == 404:
        raise Http404
    return page(
        request,
        refused={"where": where, "general": outcome.general, "errors": outcome.errors, "posted": posted or {}},
        status=outcome.status,
    )


@never_cache
@owner_required
@require_GET
def index(request):
    return page(request)


# --- messengers -------------------------------------------------------------------------------------


@never_cache
@owner_required
@require_POST
def connect(request, provider: str):
    widget = request.agent.widget
    found = call(lambda: services.writable_messenger(widget=widget, provider=provider))
    if found.refused:
        return refusal_page(request, provider, found)
    data = {name: request.POST[name] for name in ("token", "sid", "url") if name in request.POST}
    posted = {name: value for name, value in data.items() if name != "token"}  # a secret is never shown back
    validated, refused = settings_forms.validate(s.MessengerCredentialInput, data, context={"provider": found.value})
    if refused is not None:
        return refusal_page(request, provider, refused, posted)
    outcome = call(
        lambda: services.connect_messenger(widget=widget, provider=provider, data=validated, base_url=base_url(request))
    )
    if outcome.refused:
        return refusal_page(request, provider, outcome, posted)
    webhook_said(request, provider, outcome.value[1])
    return see_other("console:settings:channels")


def webhook_said(request, provider: str, webhook) -> None:
    name = NAMES.get(provider, provider)
    if webhook.status == "failed":
        text = _(
            "%(name)s: the credential is saved, but the provider refused our webhook: %(detail)s. Check again later."
        )
        messages.warning(request, text % {"name": name, "detail": webhook.detail})
    else:
        messages.success(request, _("%(name)s is connected.") % {"name": name})


@never_cache
@owner_required
@require_POST
def verify(request, provider: str):
    widget = request.agent.widget
    outcome = call(lambda: services.verify_messenger(widget=widget, provider=provider, base_url=base_url(request)))
    if outcome.refused:
        return refusal_page(request, provider, outcome)
    webhook_said(request, provider, outcome.value[1])
    return see_other("console:settings:channels")


@never_cache
@owner_required
@require_POST
def disconnect(request, provider: str):
    widget = request.agent.widget
    outcome = call(lambda: services.disconnect_messenger(widget=widget, provider=provider, base_url=base_url(request)))
    if outcome.refused:
        return refusal_page(request, provider, outcome)
    messages.success(request, _("%(name)s is disconnected.") % {"name": NAMES.get(provider, provider)})
    return see_other("console:settings:channels")


# --- VK communities ---------------------------------------------------------------------------------


def owned_community(request, community_id: int) -> VkCommunity:
    if not 0 < community_id <= MAX_ID:
        raise Http404
    found = VkCommunity.objects.filter(pk=community_id, widget=request.agent.widget).first()
    if found is None:
        raise Http404
    return found


@never_cache
@owner_required
@require_POST
def connect_community(request):
    widget = request.agent.widget
    data = {name: request.POST[name] for name in ("token", "community") if name in request.POST}
    posted = {"community": data.get("community", "")}
    validated, refused = settings_forms.validate(s.VkCommunityInput, data)
    if refused is not None:
        return refusal_page(request, VK, refused, posted)
    outcome = call(
        lambda: services.connect_vk_community(
            widget=widget, token=validated["token"], community=validated["community"], base_url=base_url(request)
        )
    )
    if outcome.refused:
        return refusal_page(request, VK, outcome, posted)
    webhook_said(request, VK, outcome.value[1])
    return see_other("console:settings:channels")


@never_cache
@owner_required
@require_POST
def primary_community(request, community_id: int):
    community = owned_community(request, community_id)
    services.set_primary_vk_community(widget=request.agent.widget, community=community)
    messages.success(request, _("Replies to VK chats now go out through %(name)s.") % {"name": community.name})
    return see_other("console:settings:channels")


@never_cache
@owner_required
@require_POST
def delete_community(request, community_id: int):
    community = owned_community(request, community_id)
    outcome = call(lambda: services.delete_vk_community(widget=request.agent.widget, community=community))
    if outcome.refused:
        return refusal_page(request, VK, outcome)
    messages.success(request, _("The VK community is disconnected."))
    return see_other("console:settings:channels")
