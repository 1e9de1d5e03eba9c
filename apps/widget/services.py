"""Writes of the widget app: settings (PATCH settings, PUT language), launcher icons and the cache
purge route. They validate with `settings_schema` (the one definition), lock the settings row,
merge only the keys they name, and emit widget.config_changed, whose handlers (apps.widget.handlers)
purge the served public config (apps.widget.cache) before the answer and again after commit. Other
apps' writes that change what a visitor's widget shows (agent status or `show_in_header`, avatars,
account name) emit their own events, handled the same way. The public config read is
`selectors.public_config`.
"""

from __future__ import annotations

import secrets
import uuid
from datetime import timedelta

from django.core.files.base import ContentFile
from django.db import DatabaseError, transaction
from django.utils import timezone

from apps.audit import services as audit
from apps.billing import selectors as billing
from apps.core import crypto, events
from apps.core.errors import AppError, ValidationFailed
from apps.core.files import store_file
from apps.core.models import Widget
from apps.core.ratelimit import Budget

from . import hours, selectors
from . import settings_schema as schema
from .cache import purge_widget_cache as purge_widget_cache
from .icons import ICON_MAX_BYTES, BadIcon, IconInfo, inspect_icon
from .models import BusinessHours, IdentitySecret, TextTranslation, WidgetIcon, WidgetSettings

# --- settings writes (everything below reads the one definition in settings_schema) -----------------

UPLOAD_REFUSED = "One or more fields are invalid."
CACHE_PURGE_BUDGET = Budget("widget_cache_purge", 6, 60)


def plan_features(widget: Widget) -> dict:
    """The plan of the widget's account as the widget app needs it (`premium_skins`: whether premium
    skins are available). Plans belong to the billing app; without one the account is on free."""
    plan = billing.plan_for(widget.account)
    return {"plan": plan.slug if plan else "free", "premium_skins": billing.has_premium_skins(widget.account)}


def _config_changed(widget: Widget) -> None:
    events.emit(widget, events.WIDGET_CONFIG_CHANGED)


def _locked_row(widget: Widget) -> WidgetSettings:
    """The settings row of `widget`, created if missing, locked until the transaction ends.

    INSERT ... ON CONFLICT DO NOTHING makes two first writers agree on one row (the second waits
    for the first to commit); SELECT ... FOR UPDATE then serialises every writer of this widget.
    """
    WidgetSettings.objects.bulk_create([WidgetSettings(widget=widget)], ignore_conflicts=True)
    return WidgetSettings.objects.select_for_update().get(widget=widget)


@transaction.atomic
def update_settings(*, widget: Widget, body: dict) -> WidgetSettings:
    """Apply a PATCH body (any subset of the writable fields) merge-safely.

    Each member is validated by its definition first (422 naming every bad member, dotted inside
    `device_profiles` and `widget_text_translations`); then, under the row lock, only the named keys
    are merged into the stored keys (so concurrent writers of different fields both survive), the
    cross-field rules run on the merged keys, the language-policy revision moves when a policy
    field or the matrix changed, and the served widget cache is purged before the answer.
    """
    delta, errors = schema.parse_patch(body, selectors.settings_context(widget))
    if errors:
        raise ValidationFailed("One or more settings are invalid.", errors=errors)
    row = _locked_row(widget)
    if delta:
        ctx = selectors.settings_context(widget, stored=row.values)
        merged = schema.merge(row.values, delta)
        errors = schema.check_merged(merged, ctx, delta=delta)
        if errors:
            raise ValidationFailed("One or more settings are invalid.", errors=errors)
        if schema.revision_changed(row.values, merged, ctx):
            row.language_policy_revision += 1
        audit.record_change(
            widget=widget,
            action="widget_settings.changed",
            target_type="widget_settings",
            before=row.values,
            after=merged,
        )
        row.values = merged
        row.updated_at = timezone.now()
        row.save(update_fields=["values", "language_policy_revision", "updated_at"])
    _config_changed(widget)
    return row


def set_default_language(*, widget: Widget, language: object) -> WidgetSettings:
    """PUT /v1/widget/language: the same write as PATCH {widget_default_language} (same validation,
    revision and purge), so the two routes cannot disagree."""
    return update_settings(widget=widget, body={"widget_default_language": language})


def request_cache_purge(*, widget: Widget) -> None:
    """POST /v1/widget/cache/purge: at most 6 per minute per widget (429 with Retry-After)."""
    CACHE_PURGE_BUDGET.check(widget.pk, detail="The widget cache may be purged 6 times per minute.")
    _config_changed(widget)


def upload_icon(*, widget: Widget, content: bytes, original_name: str) -> WidgetIcon:
    """POST /v1/widget/icons and the console's widget builder: the size and structure checks of a
    launcher icon (422 keyed `file`), then `add_icon`."""
    if len(content) > ICON_MAX_BYTES:
        raise ValidationFailed(UPLOAD_REFUSED, errors={"file": [f"The file exceeds {ICON_MAX_BYTES} bytes."]})
    try:
        info = inspect_icon(content, name=original_name or "")
    except BadIcon as exc:
        raise ValidationFailed(UPLOAD_REFUSED, errors={"file": [exc.message]}) from None
    return add_icon(widget=widget, content=content, original_name=original_name, info=info)


@transaction.atomic
def add_icon(*, widget: Widget, content: bytes, original_name: str, info: IconInfo) -> WidgetIcon:
    """Store a checked launcher icon: the private file (its id is the `custom:{file_id}` value) and
    the public copy the visitor widget loads. Purges the served cache like every widget write."""
    file = store_file(
        widget=widget,
        content=ContentFile(content),
        original_name=original_name,
        content_type=info.content_type,
        size=len(content),
    )
    icon = WidgetIcon(
        widget=widget, file=file, format=info.format, animated=info.animated, width=info.width, height=info.height
    )
    icon.image.save(f"{uuid.uuid4().hex}.{info.format}", ContentFile(content), save=False)
    icon.save()
    _config_changed(widget)
    return icon


# --- business hours --------------------------------------------------------------------------------------


@transaction.atomic
def set_business_hours(*, widget: Widget, body: object) -> dict:
    """PUT /v1/widget/business-hours: the whole resource replaced (422 naming every bad member, nothing
    stored). Purges the served config, which carries `open`, `opens_at` and the outside-hours mode."""
    value, errors = hours.validate(body)
    if errors:
        raise ValidationFailed("The business hours are invalid.", errors=errors)
    previous = BusinessHours.objects.select_for_update().filter(widget=widget).values_list("hours", flat=True).first()
    BusinessHours.objects.update_or_create(widget=widget, defaults={"hours": value, "updated_at": timezone.now()})
    audit.record_change(
        widget=widget,
        action="business_hours.changed",
        target_type="business_hours",
        before=previous or {},
        after=value,
    )
    _config_changed(widget)
    return value


# --- the identity secret (identity verification) -----------------------------------------------------------

# Product decision: the secret before the newest stays valid this long after a rotation.
IDENTITY_SECRET_OVERLAP = timedelta(hours=24)
IDENTITY_SECRET_PREFIX = "idsec_"  # noqa: S105 (a format marker, not a secret)


@transaction.atomic
def rotate_identity_secret(*, widget: Widget) -> tuple[str, object]:
    """POST /v1/widget/identity-secret and the owner's console: a new secret, answered once as
    `(secret, created_at)`. The one before it stays valid for IDENTITY_SECRET_OVERLAP; an older one
    ends at once. Audited without the secret (only that a rotation happened, and when).

    SECURITY: the plaintext leaves this function only in its return value: it is stored encrypted,
    never logged, never emitted."""
    now = timezone.now()
    secret = IDENTITY_SECRET_PREFIX + secrets.token_urlsafe(32)
    IdentitySecret.objects.bulk_create(
        [IdentitySecret(widget=widget, secret_encrypted="", created_at=now)], ignore_conflicts=True
    )
    row = IdentitySecret.objects.select_for_update().get(widget=widget)
    had_one = bool(row.secret_encrypted)
    row.previous_secret_encrypted = row.secret_encrypted
    row.previous_valid_until = now + IDENTITY_SECRET_OVERLAP if had_one else None
    row.secret_encrypted = crypto.encrypt_secret(secret)
    previous_created_at = row.created_at if had_one else None
    row.created_at = now
    row.save()
    audit.record(
        widget=widget,
        action="identity_secret.rotated",
        target_type="identity_secret",
        target_id=widget.pk,
        changes={
            "created_at": {"from": previous_created_at, "to": now},
            "previous_valid_until": {"from": None, "to": row.previous_valid_until},
        },
    )
    return secret, now


def rotate_identity_secret_keys() -> int:
    """Re-encrypt every stored identity secret (the previous ones too) under the first key of
    WEBHOOK_SECRET_KEYS (`manage.py rotate_identity_keys`). Returns how many rows."""
    count = 0
    with transaction.atomic():
        for row in IdentitySecret.objects.select_for_update():
            previous = row.previous_secret_encrypted
            IdentitySecret.objects.filter(pk=row.pk).update(
                secret_encrypted=crypto.rotate_token(row.secret_encrypted),
                previous_secret_encrypted=crypto.rotate_token(previous) if previous else "",
            )
            count += 1
    return count


# --- Django admin's deletions (no API route deletes these rows) -----------------------------------------


def _delete_audited(*, widget: Widget, row, target_type: str) -> None:
    before = audit.values(row)
    target_id = row.pk
    row.delete()
    audit.record_change(
        widget=widget,
        action=f"{target_type}.deleted",
        target_type=target_type,
        target_id=target_id,
        before=before,
        after={},
        always=True,
    )
    _config_changed(widget)


@transaction.atomic
def delete_stored_settings(*, widget: Widget) -> None:
    """Delete the widget's stored settings (every field takes its render default): audited, and the
    served config purged like every settings write. Under the row lock the API's writes take."""
    row = WidgetSettings.objects.select_for_update().filter(widget=widget).first()
    if row is not None:
        _delete_audited(widget=widget, row=row, target_type="widget_settings")


@transaction.atomic
def delete_business_hours(*, widget: Widget) -> None:
    """Delete the widget's stored hours (the default week applies): audited, and the served config,
    which carries `open`, `opens_at` and the outside-hours mode, purged as after a PUT."""
    row = BusinessHours.objects.select_for_update().filter(widget=widget).first()
    if row is not None:
        _delete_audited(widget=widget, row=row, target_type="business_hours")


@transaction.atomic
def delete_icon(*, widget: Widget, icon: WidgetIcon) -> None:
    """Delete a launcher icon row (a setting naming `custom:{file_id}` no longer gets its url in the
    served config's `icon_urls`): audited, and the served config purged as after an upload."""
    row = WidgetIcon.objects.select_for_update().filter(pk=icon.pk, widget=widget).first()
    if row is not None:
        _delete_audited(widget=widget, row=row, target_type="widget_icon")


# --- AI translations of the translatable texts ------------------------------------------------------------


class TranslationStoreUnavailable(AppError):
    """The translation store cannot be written now; nothing was reserved or dispatched. Retry later."""

    status, code, title = 503, "widget_translation_store_unavailable", "Translation store unavailable"


def request_translations(*, widget: Widget, pairs: list[tuple[str, str, str]]) -> list[TextTranslation]:
    """Mark each (locale, field, source hash) `pending`, keeping the last validated text, which stays
    served until the job stores its replacement. Runs in the caller's transaction (a savepoint, so a
    store failure leaves the caller's transaction usable); TranslationStoreUnavailable when the table
    cannot be written."""
    now = timezone.now()
    rows = []
    try:
        with transaction.atomic():
            for locale, field, requested_hash in pairs:
                row, _ = TextTranslation.objects.select_for_update().get_or_create(
                    widget=widget, locale=locale, field=field
                )
                row.status = TextTranslation.Status.PENDING
                row.requested_hash = requested_hash
                row.error = ""
                row.updated_at = now
                row.save(update_fields=["status", "requested_hash", "error", "updated_at"])
                rows.append(row)
    except DatabaseError:
        raise TranslationStoreUnavailable("The translation store cannot be written now.") from None
    return rows


@transaction.atomic
def store_translation(*, widget: Widget, translation_id: int, requested_hash: str, text: str) -> TextTranslation | None:
    """The job's validated text for the source it was asked to translate. A job overtaken by a newer
    request (another hash) stores nothing. The served config is purged."""
    row = TextTranslation.objects.select_for_update().filter(pk=translation_id, widget=widget).first()
    if row is None or row.requested_hash != requested_hash:
        return None
    row.text, row.source_hash = text, requested_hash
    row.status, row.error, row.updated_at = TextTranslation.Status.READY, "", timezone.now()
    row.save(update_fields=["text", "source_hash", "status", "error", "updated_at"])
    _config_changed(widget)
    return row


@transaction.atomic
def fail_translation(*, widget: Widget, translation_id: int, requested_hash: str, error: str) -> None:
    """The job could not produce a valid text: `failed`, the last validated text still served."""
    TextTranslation.objects.filter(pk=translation_id, widget=widget, requested_hash=requested_hash).update(
        status=TextTranslation.Status.FAILED, error=error[:64], updated_at=timezone.now()
    )
