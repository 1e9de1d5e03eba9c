"""The served widget cache (public visitor config), owned by the widget app.

Writes that change what a visitor's widget shows (agent status or `show_in_header`, avatars,
settings, language, account name) emit an event whose handlers (apps.widget.handlers) purge the
cache in the transaction, so the answer never precedes the purge, and again after commit. The
cache is keyed by a per-widget generation number, so a purge is one atomic increment and stale
entries are simply never read again (they expire on their own).

Settings writes (PATCH settings, PUT language, icon upload, the purge route) live here too; they
validate with `settings_schema` (the one definition), lock the settings row, merge only the keys
they name, and purge the served cache before answering. `public_config` is what the visitor config
route serves.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

from django.core.cache import cache
from django.core.files.base import ContentFile
from django.db import transaction
from django.utils import timezone

from apps.billing import selectors as billing
from apps.core import events
from apps.core.errors import ValidationFailed
from apps.core.files import store_file
from apps.core.models import Widget
from apps.core.ratelimit import Budget

from . import selectors
from . import settings_schema as schema
from .icons import IconInfo
from .models import WidgetIcon, WidgetSettings

CONFIG_TTL = 300


def _generation_key(widget_id: int) -> str:
    return f"widget-cache:gen:{widget_id}"


def _generation(widget_id: int) -> int:
    key = _generation_key(widget_id)
    value = cache.get(key)
    if value is None:
        cache.add(key, 1, timeout=None)
        value = cache.get(key) or 1
    return int(value)


def purge_widget_cache(*, widget_id: int) -> None:
    key = _generation_key(widget_id)
    try:
        cache.incr(key)
    except ValueError:  # never set yet: nothing cached under generation 1 can survive generation 2
        cache.set(key, 2, timeout=None)


def cached_public_config(*, widget_id: int, build: Callable[[], dict]) -> dict:
    key = f"widget-cache:config:{widget_id}:{_generation(widget_id)}"
    value = cache.get(key)
    if value is None:
        value = build()
        cache.set(key, value, timeout=CONFIG_TTL)
    return value


# --- settings writes (everything below reads the one definition in settings_schema) -----------------

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


# --- the public visitor config ----------------------------------------------------------------------


def resolved_texts(values: dict) -> dict[str, dict[str, str | None]]:
    """The translatable texts per enabled locale, in the spec's order: manual override, (current AI
    value for the exact source hash: with the translations resource), the tenant's source text,
    else null (the widget's catalogue text in that language)."""
    matrix = values["widget_text_translations"]
    return {
        locale: {name: matrix.get(locale, {}).get(name) or values[name] for name in schema.TRANSLATABLE}
        for locale in values["widget_supported_languages"]
    }


def _settings_members(widget: Widget, absolute: Callable[[str], str] | None) -> dict:
    stored = selectors.stored_values(widget)
    ctx = selectors.settings_context(widget, stored=stored)
    values = schema.public_values(stored, ctx)
    effective = schema.effective_values(stored, ctx)
    presets = {values["icon_preset"], *(p.get("icon_preset") for p in values["device_profiles"].values())}
    custom_ids = [int(p.split(":", 1)[1]) for p in presets if isinstance(p, str) and p.startswith("custom:")]
    icons = WidgetIcon.objects.filter(widget=widget, file_id__in=custom_ids) if custom_ids else []
    return {
        "language": values["widget_default_language"],
        "settings": values,
        "texts": resolved_texts(effective),
        "icon_urls": {f"custom:{icon.file_id}": selectors.icon_url(icon, absolute) for icon in icons},
        "features_from_settings": {
            "rating": values["widget_show_rating"],
            "offline_form": values["widget_show_offline_form"],
            "file_upload": values["widget_show_file_upload"],
        },
    }


def public_config(
    *,
    widget: Widget,
    base: Callable[[], dict] | None = None,
    absolute: Callable[[str], str] | None = None,
) -> dict:
    """The public visitor config (GET /api/visitor/v1/{button_guid}/config), cached per widget.

    `base` builds the members other apps own (the chats app's `config_payload`: button_guid, name,
    online, features); this adds the settings-driven members: `language` (widget_default_language),
    `settings` (every public field, device profiles as rendered), `texts` (per enabled locale),
    `icon_urls` (custom icons in use) and the settings' `features`. Everything, `base` included, is
    built once per cache generation; every write named in the spec purges it. `absolute` makes
    media URLs absolute (the embed script runs on the customer's site).
    """

    def build() -> dict:
        payload = dict(base()) if base is not None else {"button_guid": widget.button_guid, "name": widget.name}
        members = _settings_members(widget, absolute)
        features = members.pop("features_from_settings")
        payload.update(members)
        payload["features"] = {**payload.get("features", {}), **features}
        return payload

    return cached_public_config(widget_id=widget.pk, build=build)
