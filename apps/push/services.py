"""Writes of the Web Push subscriptions: a browser subscribes (or re-subscribes with fresh keys),
the operator changes what a device is told, a device is removed, a push service says a
subscription is gone, an operator who can no longer work loses every device."""

from __future__ import annotations

import base64
import binascii

from django.db import transaction
from django.utils import timezone

from apps.agents.models import Agent
from apps.core.errors import ValidationFailed
from apps.platform import outbound

from .models import KINDS, PushSubscription

CHOICES = (*KINDS, "previews")
USER_AGENT_CHARS = 120


def _b64url(value: object, *, size: int, first: int | None = None) -> str:
    """A base64url string (padding optional) of exactly `size` bytes; ValueError with the message."""
    if not isinstance(value, str) or not value or len(value) > 128:
        raise ValueError("Must be a base64url string.")
    try:
        raw = base64.urlsafe_b64decode(value + "=" * (-len(value) % 4))
    except (binascii.Error, ValueError):
        raise ValueError("Must be a base64url string.") from None
    if len(raw) != size or (first is not None and raw[0] != first):
        raise ValueError(f"Must encode {size} bytes.")
    return value.rstrip("=")


def _endpoint(value: object) -> str:
    """An https URL of a push service: the guarded client's own shape rules (no userinfo, a host);
    its address is checked again at every send."""
    if not isinstance(value, str) or not value or len(value) > 1024:
        raise ValueError(ENDPOINT_RULE)
    try:
        outbound.check_url(value)
    except outbound.OutboundBlocked:
        raise ValueError(ENDPOINT_RULE) from None
    return value


ENDPOINT_RULE = "Must be an https URL of at most 1024 characters."


def clean_subscription(data: object) -> dict:
    """The browser's PushSubscription JSON (`{endpoint, keys: {p256dh, auth}}`) checked: an https
    endpoint, the receiver's P-256 public key (65 bytes, uncompressed) and its 16-byte auth secret.
    ValidationFailed names every wrong member at once."""
    if not isinstance(data, dict):
        raise ValidationFailed(errors={"endpoint": ["The body must be the browser's subscription as JSON."]})
    clean: dict[str, str] = {}
    errors: dict[str, list[str]] = {}
    keys = data.get("keys")
    checks = [("endpoint", "endpoint", lambda: _endpoint(data.get("endpoint")))]
    if isinstance(keys, dict):
        checks += [
            ("p256dh", "keys.p256dh", lambda: _b64url(keys.get("p256dh"), size=65, first=4)),
            ("auth", "keys.auth", lambda: _b64url(keys.get("auth"), size=16)),
        ]
    else:
        errors["keys"] = ["Must hold p256dh and auth."]
    for name, field, check in checks:
        try:
            clean[name] = check()
        except ValueError as exc:
            errors[field] = [str(exc)]
    if errors:
        raise ValidationFailed(errors=errors)
    return clean


@transaction.atomic
def subscribe_device(*, agent: Agent, data: object, user_agent: str = "", language: str = "en") -> PushSubscription:
    """Store the browser's subscription for `agent` (ValidationFailed changes nothing). The same
    endpoint again (the browser renewed its keys) updates the keys and keeps the choices."""
    clean = clean_subscription(data)
    subscription, _ = PushSubscription.objects.update_or_create(
        widget_id=agent.widget_id,
        agent=agent,
        endpoint=clean["endpoint"],
        defaults={
            "p256dh": clean["p256dh"],
            "auth": clean["auth"],
            "user_agent": user_agent[:USER_AGENT_CHARS],
            "language": language,
        },
    )
    return subscription


@transaction.atomic
def set_choices(*, subscription: PushSubscription, choices: dict[str, bool]) -> PushSubscription:
    """What this device is told: each of assigned, queue, mention, sla and previews, a boolean."""
    unknown = sorted(set(choices) - set(CHOICES))
    if unknown:
        raise ValidationFailed(errors={name: ["Unknown choice."] for name in unknown})
    for name, value in choices.items():
        if not isinstance(value, bool):
            raise ValidationFailed(errors={name: ["Must be a boolean."]})
        setattr(subscription, name, value)
    subscription.save(update_fields=[*choices])
    return subscription


def remove_device(*, subscription: PushSubscription) -> None:
    PushSubscription.objects.filter(pk=subscription.pk).delete()


def forget_endpoint(*, subscription_id: int) -> int:
    """The push service answered 404 or 410: the browser dropped the subscription for good."""
    deleted, _ = PushSubscription.objects.filter(pk=subscription_id).delete()
    return deleted


def record_success(*, subscription_id: int) -> None:
    PushSubscription.objects.filter(pk=subscription_id).update(last_success_at=timezone.now())


def forget_agent(*, widget_id: int, agent_id: int) -> int:
    """A suspended or deleted operator is told nothing more: every device of theirs goes."""
    deleted, _ = PushSubscription.objects.filter(widget_id=widget_id, agent_id=agent_id).delete()
    return deleted
