"""Subscription writes: create, update, rotate the secret, delete. A destination must be https,
carry no credentials and resolve only to public addresses (the guarded client's policy)."""

from __future__ import annotations

from django.db import IntegrityError, transaction
from django.utils import timezone

from apps.audit import services as audit
from apps.core import services as core_services
from apps.core.crypto import encrypt_secret, generate_secret
from apps.core.errors import Conflict, ValidationFailed
from apps.core.models import Widget
from apps.platform import outbound

from . import catalogue
from .models import Subscription

UNREACHABLE = "The host does not resolve to a public address."


class DuplicateSubscription(Conflict):
    """A subscription of this widget already targets that url."""

    code, title = "subscription_url_exists", "A subscription for this url already exists"


def check_destination(url: str) -> None:
    """https only, no credentials, a real port, and every resolved address public (loopback only
    when OUTBOUND_ALLOW_LOOPBACK). Raises ValidationFailed at `url`.

    SECURITY: a host that does not resolve and one that resolves to a refused address get the same
    message, so a tenant cannot map which internal names exist."""
    try:
        parts = outbound.check_url(url)
    except outbound.OutboundBlocked as exc:  # the URL's shape: nothing was resolved
        raise ValidationFailed(errors={"url": [f"Refused destination ({exc.reason})."]}) from None
    try:
        outbound.pin_address(parts.hostname, parts.port or 443)
    except (outbound.OutboundBlocked, outbound.OutboundError):
        raise ValidationFailed(errors={"url": [UNREACHABLE]}) from None


def validate_events(events: list[str], *, legacy: bool) -> list[str]:
    errors = []
    for name in events:
        if legacy:
            if name not in catalogue.LEGACY_NAMES:
                errors.append(f"{name!r} is not a legacy event name ({', '.join(catalogue.LEGACY_NAMES)}).")
        elif name in catalogue.REFUSED_NATIVE:
            errors.append(catalogue.REFUSED_NATIVE[name])
        elif name not in catalogue.NATIVE_NAMES:
            errors.append(f"{name!r} is not a native event name.")
    if errors:
        raise ValidationFailed(errors={"events": errors})
    return list(dict.fromkeys(events))


@transaction.atomic
def create_subscription(
    *, widget: Widget, url: str, events: list[str], secret: str | None = None, is_legacy_compat: bool = False
) -> tuple[Subscription, str]:
    """Returns the subscription and its secret (shown once)."""
    events = validate_events(events, legacy=is_legacy_compat)
    check_destination(url)
    secret = secret or generate_secret()
    try:
        with transaction.atomic():
            sub = Subscription.objects.create(
                widget=widget,
                url=url,
                events=events,
                secret_encrypted=encrypt_secret(secret),
                is_legacy_compat=is_legacy_compat,
            )
    except IntegrityError:
        raise DuplicateSubscription("This widget already has a subscription for that url.") from None
    audit.record_change(
        widget=widget,
        action="webhook_subscription.created",
        target_type="webhook_subscription",
        target_id=sub.pk,
        before={},
        after=audit.values(sub),
        always=True,
    )
    return sub, secret


@transaction.atomic
def update_subscription(*, widget: Widget, subscription: Subscription, changes: dict) -> Subscription:
    sub = Subscription.objects.select_for_update().get(pk=subscription.pk, widget=widget)
    before = audit.values(sub)
    legacy = changes.get("is_legacy_compat", sub.is_legacy_compat)
    events = changes.get("events", sub.events)
    if "events" in changes or legacy != sub.is_legacy_compat:
        try:
            events = validate_events(events, legacy=legacy)
        except ValidationFailed as exc:
            if "events" not in changes:
                raise ValidationFailed(
                    errors={"is_legacy_compat": ["The subscribed events do not fit that vocabulary; send events too."]}
                ) from exc
            raise
    if "url" in changes and changes["url"] != sub.url:
        check_destination(changes["url"])
        if Subscription.objects.filter(widget=widget, url=changes["url"]).exclude(pk=sub.pk).exists():
            raise DuplicateSubscription("This widget already has a subscription for that url.")
        sub.url = changes["url"]
    sub.events, sub.is_legacy_compat = events, legacy
    if "is_active" in changes:
        sub.is_active = changes["is_active"]
    sub.updated_at = timezone.now()
    sub.save()
    audit.record_change(
        widget=widget,
        action="webhook_subscription.changed",
        target_type="webhook_subscription",
        target_id=sub.pk,
        before=before,
        after=audit.values(sub),
    )
    return sub


@transaction.atomic
def rotate_secret(*, widget: Widget, subscription: Subscription, secret: str | None = None) -> str:
    """Immediate cutover: the old secret is overwritten; queued and backing-off deliveries read
    the new one when their attempt runs."""
    secret = secret or generate_secret()
    Subscription.objects.filter(pk=subscription.pk, widget=widget).update(
        secret_encrypted=encrypt_secret(secret), updated_at=timezone.now()
    )
    audit.record(
        widget=widget,
        action="webhook_subscription.changed",
        target_type="webhook_subscription",
        target_id=subscription.pk,
        changes={"secret": {"from": None, "to": None}},
    )
    return secret


@transaction.atomic
def delete_subscription(*, widget: Widget, subscription: Subscription) -> None:
    """Delete the subscription with its delivery log, in batches: a busy subscription's log holds more
    deliveries than one statement can name."""
    found = Subscription.objects.select_for_update().filter(pk=subscription.pk, widget=widget).first()
    if found is not None:
        core_services.delete_with_dependents(found)
        audit.record_change(
            widget=widget,
            action="webhook_subscription.deleted",
            target_type="webhook_subscription",
            target_id=subscription.pk,
            before=audit.values(subscription),
            after={},
            always=True,
        )
