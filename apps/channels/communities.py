"""VK communities of a widget: the `vk` messenger is connected through them (its own routes, not
PUT), its provider reached through the registry as every provider is (the account hooks of
`Provider`). Connecting resolves the community through VK (a rejection is 422, no answer 502,
nothing stored), stores it (the first is primary) and registers our Callback API server; removing it
unregisters the server first and keeps the record when VK does not confirm (502). Requests count
against the messenger routes' provider-call budget; every write purges the widget cache."""

from __future__ import annotations

import contextlib
import secrets

from django.db import IntegrityError, transaction

from apps.audit import services as audit
from apps.billing import selectors as billing
from apps.core import crypto, events
from apps.core.errors import AppError, Conflict, ValidationFailed
from apps.core.models import Widget

from .messengers import CredentialRejected, PlanRequired, WebhookOutcome, check_provider_budget, hook_path
from .models import MessengerConnection, VkCommunity
from .providers import registry
from .providers.base import Provider

# The provider these routes (`messengers/vk/communities`) connect.
PROVIDER_CODE = "vk"


def _provider() -> Provider:
    return registry.PROVIDERS[PROVIDER_CODE]


class ProviderFailed(AppError):
    status, code, title = 502, "provider_failed", "The provider did not answer or did not confirm"


class CommunityExists(Conflict):
    code, title = "community_exists", "This community is already connected"


def _vk_hook(widget: Widget) -> MessengerConnection:
    """The widget's VK hook (one per widget; communities are told apart by group_id)."""
    conn = MessengerConnection.objects.filter(widget=widget, provider=PROVIDER_CODE).first()
    if conn is None:
        try:
            with transaction.atomic():
                conn = MessengerConnection.objects.create(  # live: each community's secret authenticates its events
                    widget=widget, provider=PROVIDER_CODE, hook_id=secrets.token_urlsafe(24), inbound_live=True
                )
        except IntegrityError:
            conn = MessengerConnection.objects.get(widget=widget, provider=PROVIDER_CODE)
    return conn


# Audit rows: vk_community.created, .deleted (the token shows as "[hidden]").
AUDIT_TARGET = "vk_community"


def audited(community: VkCommunity) -> dict:
    return {"community_id": community.community_id, "name": community.name, "token": community.token_encrypted}


def community_payload(community: VkCommunity) -> dict:
    return {
        "id": community.pk,
        "community_id": community.community_id,
        "name": community.name,
        "screen_name": community.screen_name,
        "is_primary": community.is_primary,
        "webhook_status": community.webhook_status or None,
        "created_at": community.created_at.isoformat(),
    }


def connect_community(
    *, widget: Widget, token: str, community: str, base_url: str, claim=contextlib.nullcontext
) -> tuple[VkCommunity, WebhookOutcome]:
    """Resolve the community through VK (a rejection is 422, no answer 502, nothing stored), store
    it (the first one is primary), then register our Callback API server; a failed registration
    keeps the record with inbound not live."""
    if not billing.has_paid_plan(widget.account):
        raise PlanRequired("Connecting messengers needs a paid plan.")
    provider = _provider()
    key = provider.account_ref(community)
    if key is None:
        raise ValidationFailed(errors={"community": ["An id, a club-style name or a vk.com link."]})
    check_provider_budget(widget)
    found = provider.resolve_account(token, key)
    if not found.ok:
        if found.rejected:
            raise CredentialRejected(
                "VK refused the token or the community.", errors={"community": [found.description]}
            )
        raise ProviderFailed(f"VK did not answer: {found.description}")
    group = found.response
    community_id = group.get("id") if isinstance(group.get("id"), int) else None
    if community_id is None:
        raise ProviderFailed("VK answered without a community id.")
    hook = _vk_hook(widget)
    with transaction.atomic(), claim():
        if VkCommunity.objects.filter(widget=widget, community_id=community_id).exists():
            raise CommunityExists("This community is already connected to the widget.")
        row = VkCommunity.objects.create(
            widget=widget,
            community_id=community_id,
            name=str(group.get("name") or "")[:255],
            screen_name=str(group.get("screen_name") or "")[:255],
            token_encrypted=crypto.encrypt_secret(token),
            secret_encrypted="",
            is_primary=not VkCommunity.objects.filter(widget=widget).exists(),
        )
        audit.record_row(
            widget=widget, target_type=AUDIT_TARGET, target_id=community_id, before=None, after=audited(row)
        )
        events.emit(widget, events.WIDGET_CONFIG_CHANGED)
    result, code, secret, server_id = provider.register_account(
        token, account_id=community_id, url=base_url.rstrip("/") + hook_path(hook)
    )
    outcome = (
        WebhookOutcome(True, MessengerConnection.WebhookStatus.REGISTERED)
        if result.ok
        else WebhookOutcome(True, MessengerConnection.WebhookStatus.FAILED, result.description)
    )
    VkCommunity.objects.filter(pk=row.pk).update(
        confirmation_code=code[:64],
        secret_encrypted=crypto.encrypt_secret(secret),
        server_id=server_id,
        webhook_status=outcome.status,
        webhook_detail=outcome.detail[:255],
    )
    row.refresh_from_db()
    return row, outcome


@transaction.atomic
def set_primary_community(*, widget: Widget, community: VkCommunity) -> VkCommunity:
    VkCommunity.objects.select_for_update().filter(widget=widget).update(is_primary=False)
    VkCommunity.objects.filter(pk=community.pk, widget=widget).update(is_primary=True)
    events.emit(widget, events.WIDGET_CONFIG_CHANGED)
    community.refresh_from_db()
    return community


def delete_community(*, widget: Widget, community: VkCommunity, count_call: bool = True) -> None:
    """Remove our callback server at VK first; when VK does not confirm, the record stays and the
    answer is 502 (try again). The next oldest community becomes primary."""
    if count_call:
        check_provider_budget(widget)
    token = crypto.decrypt_secret(community.token_encrypted)
    if community.server_id is not None:
        result = _provider().unregister_account(
            token or "", account_id=community.community_id, server_id=community.server_id
        )
        if not result.ok:
            raise ProviderFailed(f"VK did not confirm the removal ({result.description}); the community is kept.")
    with transaction.atomic():
        if VkCommunity.objects.filter(pk=community.pk, widget=widget).delete()[0]:
            audit.record_row(
                widget=widget,
                target_type=AUDIT_TARGET,
                target_id=community.community_id,
                before=audited(community),
                after=None,
            )
        if community.is_primary:
            successor = VkCommunity.objects.filter(widget=widget).order_by("created_at", "pk").first()
            if successor is not None:
                VkCommunity.objects.filter(pk=successor.pk).update(is_primary=True)
        events.emit(widget, events.WIDGET_CONFIG_CHANGED)
