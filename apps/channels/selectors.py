"""Reads on channels. Tenant first."""

from __future__ import annotations

import hashlib
import hmac
from datetime import datetime

from django.db.models import Count, Min, OuterRef, Subquery

from apps.agents import selectors as agent_selectors
from apps.agents.models import Agent
from apps.core.models import Widget
from apps.webhooks.models import Delivery

from .delivery import CUSTOM_OWNER, owners
from .models import CustomChannel, ExternalContact

CUSTOM_PREFIX = "ch"


def custom_channel_id(code: str) -> int | None:
    """`ch12` -> 12; None for any other channel code."""
    if code.startswith(CUSTOM_PREFIX) and code[2:].isascii() and code[2:].isdigit() and code[2] != "0":
        return int(code[2:])
    return None


def get_custom_channel(widget: Widget, channel_id: int) -> CustomChannel | None:
    return CustomChannel.objects.filter(widget=widget, pk=channel_id).first()


def find_legacy_chat_channel(secret: str) -> CustomChannel | None:
    """The legacy Chat API channel whose path secret is `secret`, or None. The row is found by the
    secret's public first part; the whole secret is compared as a SHA-256 in constant time, so a
    guess that finds the row learns nothing from the timing of the comparison."""
    if not isinstance(secret, str) or not 16 <= len(secret) <= 128 or not secret.isascii():
        return None
    channel = (
        CustomChannel.objects.select_related("widget")
        .filter(path_key=secret[:8], wire_format=CustomChannel.WireFormat.LEGACY_CHAT)
        .first()
    )
    digest = hashlib.sha256(secret.encode()).hexdigest()
    stored = channel.path_secret_hash if channel is not None else "0" * 64
    if not hmac.compare_digest(digest, stored) or channel is None:
        return None
    return channel


def has_active_custom_channel(widget: Widget) -> bool:
    return CustomChannel.objects.filter(widget=widget, is_active=True).exists()


def is_online(widget: Widget, channel: CustomChannel) -> bool:
    """Someone answers on this channel now: the channel is active and an operator of the widget is
    online (a human with live presence, or an active AI or external operator, which never sleep)."""
    if not channel.is_active:
        return False
    if Agent.objects.filter(widget=widget, status=Agent.Status.ACTIVE).exclude(type=Agent.Type.HUMAN).exists():
        return True
    online = agent_selectors.online_agent_ids(widget)
    return (
        bool(online)
        and Agent.objects.filter(
            widget=widget, pk__in=online, type=Agent.Type.HUMAN, status=Agent.Status.ACTIVE
        ).exists()
    )


def external_contact_for(widget: Widget, *, channel: str, contact_id: int) -> ExternalContact | None:
    return ExternalContact.objects.filter(widget=widget, channel=channel, contact_id=contact_id).first()


def get_pending_deliveries() -> tuple[int, datetime | None]:
    """Every widget's pending outbound channel deliveries together: (how many, created_at of the
    oldest). For /metrics only: it names no tenant."""
    found = Delivery.objects.filter(status=Delivery.Status.PENDING, endpoint__owner__in=owners()).aggregate(
        n=Count("id"), oldest=Min("created_at")
    )
    return found["n"], found["oldest"]


def messenger_rows(widget: Widget) -> list[dict]:
    """Every provider as GET /v1/messengers lists it, with what the owner's page shows besides: the
    fields a connect takes, and the provider webhook's last registration status and reason (never a
    credential)."""
    from . import messengers
    from .models import MessengerConnection
    from .providers import registry

    stored = {c.provider: c for c in MessengerConnection.objects.filter(widget=widget)}
    rows = []
    for row in messengers.list_rows(widget):
        provider = registry.get(row["provider"])
        conn = stored.get(row["provider"])
        rows.append(
            {
                **row,
                "fields": provider.fields if provider is not None and provider.writable else (),
                "webhook_status": conn.webhook_status if conn is not None else "",
                "webhook_detail": conn.webhook_detail if conn is not None else "",
            }
        )
    return rows


def custom_channels_with_state(widget: Widget) -> list[CustomChannel]:
    """The widget's custom channels, newest first, each with `last_status` and `last_error` of its
    latest outbound delivery (None when nothing was sent): one query."""
    latest = Delivery.objects.filter(
        widget=widget, endpoint__owner=CUSTOM_OWNER, endpoint__owner_id=OuterRef("pk")
    ).order_by("-created_at", "-id")
    return list(
        CustomChannel.objects.filter(widget=widget)
        .annotate(
            last_status=Subquery(latest.values("status")[:1]), last_error=Subquery(latest.values("last_error")[:1])
        )
        .order_by("-created_at", "-id")
    )
