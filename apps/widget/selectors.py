"""Reads of the widget app: the settings as GET shows them, the language resource, the catalogues
and the embed snippet. Every value comes from `settings_schema` (the one definition)."""

from __future__ import annotations

import hashlib
import hmac
import logging
from collections.abc import Callable
from datetime import UTC, datetime

from django.conf import settings
from django.db import DatabaseError
from django.utils import timezone
from django.utils.html import escape

from apps.core import crypto, ports
from apps.core.models import Widget

from . import hours
from . import settings_schema as schema
from .cache import cached_per_generation, cached_public_config
from .models import BusinessHours, IdentitySecret, TextTranslation, WidgetIcon, WidgetSettings

logger = logging.getLogger(__name__)

# Widgets created before this instant are "legacy": they keep the implicit localization defaults of
# the service before the language resource (ru; supported [ru, en]; fallback ru; AI off). Override
# with the Django setting WIDGET_SETTINGS_LEGACY_CUTOFF (an aware datetime or ISO 8601 string).
LEGACY_CUTOFF = datetime(2025, 1, 1, tzinfo=UTC)

EMBED_SCRIPT_PATH = "/static/widget/loader.js"

# The widget `manage.py seed_demo` makes (apps/widget/management/commands/seed_demo.py names the
# same two values; apps/widget/tests/test_embed_bundle.py checks they agree).
DEMO_OWNER_EMAIL = "demo@example.com"
DEMO_WIDGET_NAME = "Demo widget"


def legacy_cutoff() -> datetime:
    value = getattr(settings, "WIDGET_SETTINGS_LEGACY_CUTOFF", None)
    if value is None:
        return LEGACY_CUTOFF
    return datetime.fromisoformat(value) if isinstance(value, str) else value


def widget_generation(widget: Widget) -> str:
    return "legacy" if widget.created_at < legacy_cutoff() else "new"


def get_settings_row(widget: Widget) -> WidgetSettings | None:
    return WidgetSettings.objects.filter(widget=widget).first()


def stored_values(widget: Widget) -> dict:
    row = get_settings_row(widget)
    return dict(row.values) if row is not None else {}


def available_skins(widget: Widget) -> frozenset[str]:
    from .services import plan_features  # services imports this module

    premium = plan_features(widget).get("premium_skins", False)
    return frozenset(s.id for s in schema.SKINS if premium or not s.premium)


def settings_context(widget: Widget, *, stored: dict | None = None) -> schema.Context:
    """The per-widget facts validation and the schema need. `stored`: the stored keys when the
    caller has them (the enabled locales of the schema's matrix keys come from them)."""
    generation = widget_generation(widget)
    base = schema.Context(generation=generation, available_skins=available_skins(widget))
    stored = stored_values(widget) if stored is None else stored
    enabled = schema.effective_values(stored, base)["widget_supported_languages"]
    return schema.Context(
        generation=generation,
        available_skins=base.available_skins,
        enabled_locales=tuple(enabled),
        icon_exists=lambda file_id: WidgetIcon.objects.filter(widget=widget, file_id=file_id).exists(),
    )


def source_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def translation_sources(values: dict) -> dict[str, dict]:
    """{(locale, field) key: {locale, field, source, hash}} of every text an AI translation serves:
    the enabled locales other than the content source language, the translatable fields with a
    non-empty source text."""
    source_language = values.get("widget_content_source_language")
    out = {}
    for locale in values["widget_supported_languages"]:
        if locale == source_language:
            continue
        for field in schema.TRANSLATABLE:
            text = values.get(field) or ""
            if text:
                out[f"{locale}:{field}"] = {"locale": locale, "field": field, "source": text, "hash": source_hash(text)}
    return out


def effective_settings(widget: Widget) -> dict:
    """Every writable setting's effective value (stored, else its default)."""
    stored = stored_values(widget)
    return schema.effective_values(stored, settings_context(widget, stored=stored))


def translation_rows(widget: Widget) -> dict[str, TextTranslation]:
    return {f"{row.locale}:{row.field}": row for row in TextTranslation.objects.filter(widget=widget)}


def translation_state(row: TextTranslation | None, current_hash: str) -> str:
    if row is None:
        return "stale"
    if row.status == TextTranslation.Status.PENDING:
        return "pending"
    if row.status == TextTranslation.Status.FAILED and row.requested_hash == current_hash:
        return "failed"
    return "ready" if row.source_hash == current_hash and row.text else "stale"


def translation_status(widget: Widget, *, values: dict, revision: int) -> dict:
    """`{available, enabled, reason, revision, total, counts}`: `schema_unavailable` (zero counts)
    when the translation table cannot be read, `credential_missing` while auto-translation is on and
    no active widget-wide credential exists."""
    enabled = bool(values["widget_auto_translate_custom_texts"])
    counts = {"ready": 0, "stale": 0, "pending": 0, "failed": 0}
    sources = translation_sources(values)
    try:
        rows = translation_rows(widget)
    except DatabaseError:
        return {
            "available": False,
            "enabled": enabled,
            "reason": "schema_unavailable",
            "revision": revision,
            "total": 0,
            "counts": counts,
        }
    for key, source in sources.items():
        counts[translation_state(rows.get(key), source["hash"])] += 1
    # The AI app above answers whether an active widget-wide provider credential exists.
    has_credential = ports.lookup(ports.WIDGET_CREDENTIAL)(widget)
    reason = "credential_missing" if enabled and not has_credential else None
    return {
        "available": True,
        "enabled": enabled,
        "reason": reason,
        "revision": revision,
        "total": len(sources),
        "counts": counts,
    }


def settings_payload(widget: Widget, row: WidgetSettings | None = None) -> dict:
    """Every field of the definition: writable ones with their effective value, then the read-only
    members."""
    if row is None:
        row = get_settings_row(widget)
    stored = dict(row.values) if row is not None else {}
    ctx = settings_context(widget, stored=stored)
    values = schema.effective_values(stored, ctx)
    revision = row.language_policy_revision if row is not None else 0
    updated_at = row.updated_at if row is not None and row.updated_at else widget.created_at
    read_only = {
        "widget_id": widget.pk,
        "api_enabled": widget.api_enabled,
        "widget_language_policy_revision": revision,
        "widget_translation_revision": revision,
        "widget_translation_status": translation_status(widget, values=values, revision=revision),
        "updated_at": updated_at.isoformat(),
    }
    return {name: values[name] if name in values else read_only[name] for name in schema.FIELDS}


def settings_schema_document(widget: Widget) -> dict:
    """GET /v1/widget/settings/schema's document for `widget`: every field as the one definition
    describes it (the console's widget builder draws its form from it, so a new field shows there)."""
    return schema.schema_document(settings_context(widget, stored=stored_values(widget)))


def uploaded_icons(widget: Widget) -> list[WidgetIcon]:
    """The launcher icons uploaded to `widget`, newest first."""
    return list(WidgetIcon.objects.filter(widget=widget).order_by("-pk"))


def language_payload(widget: Widget, row: WidgetSettings | None = None) -> dict:
    """`widget_default_language`, whether it is the implicit default (no stored key), and the
    concrete language it resolves to without a visitor: the value itself, or for `auto` the
    fallback language (a visitor's browser language decides at render time)."""
    if row is None:
        row = get_settings_row(widget)
    stored = dict(row.values) if row is not None else {}
    values = schema.effective_values(stored, settings_context(widget, stored=stored))
    value = values["widget_default_language"]
    return {
        "widget_default_language": value,
        "is_default": "widget_default_language" not in stored,
        "effective_language": values["widget_fallback_language"] if value == "auto" else value,
    }


def list_skins(widget: Widget) -> list[dict]:
    allowed = available_skins(widget)
    return [{"id": s.id, "name": s.name, "premium": s.premium, "available": s.id in allowed} for s in schema.SKINS]


def list_icon_presets() -> list[dict]:
    return [{"id": preset, "name": name} for preset, name in schema.ICON_PRESETS]


def embed_payload(widget: Widget, *, origin: str) -> dict:
    """The loader URL is `{origin}/static/widget/loader.js?guid=<button_guid>`, where `origin` is
    the setting WIDGET_EMBED_ORIGIN when set (a CDN or the public host), else the request's scheme
    and host."""
    origin = (getattr(settings, "WIDGET_EMBED_ORIGIN", "") or origin).rstrip("/")
    script_url = f"{origin}{EMBED_SCRIPT_PATH}?guid={widget.button_guid}"
    return {
        "button_guid": widget.button_guid,
        "script_url": script_url,
        "snippet": f'<script src="{escape(script_url)}" async></script>',
    }


def get_demo_widget() -> Widget | None:
    """The seeded demo widget (the first one, should several owners share the address)."""
    return Widget.objects.filter(account__user__email=DEMO_OWNER_EMAIL, name=DEMO_WIDGET_NAME).order_by("pk").first()


def icon_url(icon: WidgetIcon, absolute=None) -> str:
    url = icon.image.url
    return absolute(url) if absolute is not None and url.startswith("/") else url


# --- the public visitor config ----------------------------------------------------------------------


def resolved_texts(
    values: dict, translations: dict[str, TextTranslation] | None = None
) -> dict[str, dict[str, str | None]]:
    """The translatable texts per enabled locale, in the spec's order: manual override, the AI value
    for the exact source hash (the last validated one, kept while a regeneration is pending or
    failed), the tenant's source text, else null (the widget's catalogue text in that language)."""
    matrix = values["widget_text_translations"]
    translations = translations or {}

    def ai_value(locale: str, field: str) -> str | None:
        row = translations.get(f"{locale}:{field}")
        source = values.get(field) or ""
        if row is not None and row.text and source and row.source_hash == source_hash(source):
            return row.text
        return None

    return {
        locale: {
            name: matrix.get(locale, {}).get(name) or ai_value(locale, name) or values[name]
            for name in schema.TRANSLATABLE
        }
        for locale in values["widget_supported_languages"]
    }


def _served_translations(widget: Widget) -> dict[str, TextTranslation]:
    try:
        return translation_rows(widget)
    except DatabaseError:  # the store is unavailable: the tenant's texts are served
        return {}


def translations_payload(widget: Widget) -> dict:
    """GET /v1/widget/translations: the status object, the revision and one item per text, the
    translated text itself redacted (`has_text`)."""
    row = get_settings_row(widget)
    stored = dict(row.values) if row is not None else {}
    values = schema.effective_values(stored, settings_context(widget, stored=stored))
    revision = row.language_policy_revision if row is not None else 0
    status = translation_status(widget, values=values, revision=revision)
    items = []
    if status["available"]:
        rows = translation_rows(widget)
        for key, source in translation_sources(values).items():
            found = rows.get(key)
            items.append(
                {
                    "locale": source["locale"],
                    "field": source["field"],
                    "state": translation_state(found, source["hash"]),
                    "has_text": bool(found and found.text),
                    "source_hash": source["hash"],
                    "error": (found.error or None) if found else None,
                    "updated_at": found.updated_at.isoformat() if found else None,
                }
            )
    return {"status": status, "revision": revision, "items": items}


def _settings_members(widget: Widget, absolute: Callable[[str], str] | None) -> dict:
    stored = stored_values(widget)
    ctx = settings_context(widget, stored=stored)
    values = schema.public_values(stored, ctx)
    effective = schema.effective_values(stored, ctx)
    presets = {values["icon_preset"], *(p.get("icon_preset") for p in values["device_profiles"].values())}
    custom_ids = [int(p.split(":", 1)[1]) for p in presets if isinstance(p, str) and p.startswith("custom:")]
    icons = WidgetIcon.objects.filter(widget=widget, file_id__in=custom_ids) if custom_ids else []
    return {
        "language": values["widget_default_language"],
        "settings": values,
        "identity_verification": values["identity_verification"],
        "texts": resolved_texts(effective, _served_translations(widget)),
        "icon_urls": {f"custom:{icon.file_id}": icon_url(icon, absolute) for icon in icons},
        "features_from_settings": {
            "rating": values["widget_show_rating"] and values["rating_mode"] != "off",
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


def cached_for_config(*, widget: Widget, name: str, build: Callable[[], object], ttl: int) -> object:
    """A value other apps derive for the public config (the visitor API's answerers), cached with
    the config: purged with it, and at most `ttl` seconds old."""
    return cached_per_generation(name=name, widget_id=widget.pk, build=build, ttl=ttl)


# --- business hours (the one computation: apps.widget.hours.state_at) ------------------------------------

# How long the visitor config's read of the hours is cached (every PUT purges it at once).
HOURS_TTL = 300


def get_business_hours(widget: Widget) -> dict:
    """The resource as GET answers it (the default before the first PUT)."""
    row = BusinessHours.objects.filter(widget=widget).only("hours").first()
    return dict(row.hours) if row is not None else hours.default_hours(settings.BUSINESS_TIME_ZONE)


def cached_business_hours(widget: Widget) -> dict:
    """The resource as GET answers it, read with the public config's cache (a PUT purges it), so a
    hot path pays no query."""
    stored = None
    try:
        stored = cached_for_config(widget=widget, name="hours", build=lambda: get_business_hours(widget), ttl=HOURS_TTL)
    except Exception:  # noqa: BLE001 - the cache is down: the row still answers
        logger.warning("business hours of widget %s read past the cache", widget.pk, exc_info=True)
    return stored if stored is not None else get_business_hours(widget)


def business_hours_state(widget: Widget, *, now: datetime | None = None, cached: bool = True) -> hours.HoursState:
    """Open or closed now (or at `now`) and the next opening, in the widget's time zone.
    `cached=False` reads the row (one query every time, for pages that count their queries)."""
    stored = cached_business_hours(widget) if cached else get_business_hours(widget)
    return hours.state_at(stored, now or datetime.now(UTC))


def add_open_seconds(widget: Widget, start: datetime, seconds: int) -> datetime:
    """When `seconds` of the widget's open time have passed since `start` (apps.widget.hours)."""
    return hours.add_open_seconds(cached_business_hours(widget), start, seconds)


def department_schedule_open(schedule: dict, *, widget: Widget, now: datetime) -> bool:
    """A department's own week (`schedule`) at `now`, read in the widget's time zone (the widget's
    hours are not consulted: `department_is_open` adds them)."""
    return hours.department_open_at(schedule, cached_business_hours(widget)["timezone"], now)


def department_is_open(widget: Widget, department, *, now: datetime | None = None) -> bool:
    """A department is open when the widget's hours and the department's own week both say so (the
    department's week is read in the widget's time zone)."""
    now = now or datetime.now(UTC)
    if not business_hours_state(widget, now=now).open:
        return False
    zone = get_business_hours(widget)["timezone"]
    return hours.department_open_at(department.schedule, zone, now)


def typing_preview_enabled(widget: Widget) -> bool:
    """The `typing_preview` setting, read with the public config's cache (a settings PATCH purges it)."""

    def build() -> bool:
        stored = stored_values(widget)
        return bool(schema.effective_values(stored, settings_context(widget, stored=stored))["typing_preview"])

    return bool(cached_for_config(widget=widget, name="typing-preview", build=build, ttl=HOURS_TTL))


def prechat_form(widget: Widget) -> dict:
    """The `prechat` setting `{when, fields}`, read with the public config's cache (a settings PATCH
    purges it)."""

    def build() -> dict:
        stored = stored_values(widget)
        return schema.effective_values(stored, settings_context(widget, stored=stored))["prechat"]

    return cached_for_config(widget=widget, name="prechat", build=build, ttl=HOURS_TTL)


# --- identity verification -------------------------------------------------------------------------------


def identity_verification(widget: Widget) -> str:
    """The `identity_verification` setting (`off`, `optional`, `required`), read with the public
    config's cache (a settings PATCH purges it)."""

    def build() -> str:
        return effective_settings(widget)["identity_verification"]

    return str(cached_for_config(widget=widget, name="identity-verification", build=build, ttl=HOURS_TTL))


def identity_secret_info(widget: Widget) -> dict:
    """What the owner may know of the identity secret without seeing it: `{created_at,
    previous_valid_until}` (both None before the first one)."""
    row = IdentitySecret.objects.filter(widget=widget).only("created_at", "previous_valid_until").first()
    if row is None:
        return {"created_at": None, "previous_valid_until": None}
    now = timezone.now()
    until = row.previous_valid_until if row.previous_valid_until and row.previous_valid_until > now else None
    return {"created_at": row.created_at, "previous_valid_until": until}


def identity_hash(secret: str, external_id: str) -> str:
    """Lowercase hex HMAC-SHA256 of `external_id` (UTF-8) under `secret` (its text as UTF-8): what a
    site computes for `ChatWidget.setUser({id, hash})`."""
    return hmac.new(secret.encode(), external_id.encode(), "sha256").hexdigest()


def identity_hash_valid(*, widget: Widget, external_id: str, hash: str, now: datetime | None = None) -> bool:  # noqa: A002
    """Whether `hash` is the HMAC of `external_id` under the widget's secret, or under the one
    before it while that is inside its 24-hour overlap. No secret: nothing verifies.

    SECURITY: compared with hmac.compare_digest against every valid secret (no early exit), so
    the time taken says nothing about how much of the hash was right."""
    row = IdentitySecret.objects.filter(widget=widget).first()
    if row is None or not hash:
        return False
    now = now or timezone.now()
    keys = [row.secret_encrypted]
    if row.previous_secret_encrypted and row.previous_valid_until and row.previous_valid_until > now:
        keys.append(row.previous_secret_encrypted)
    given = hash.encode("utf-8", "replace")
    matched = False
    for token in keys:
        secret = crypto.decrypt_secret(token)
        if secret is not None:
            matched |= hmac.compare_digest(identity_hash(secret, external_id).encode(), given)
    return matched


# --- operators' sign-in ----------------------------------------------------------------------------------


def requiring_two_factor(widget_ids) -> list[int]:
    """Which of `widget_ids` have `require_2fa` on (sorted). Read from the stored settings, never
    from a cache: a sign-in decides on it."""
    return sorted(
        WidgetSettings.objects.filter(widget_id__in=list(widget_ids), values__require_2fa=True).values_list(
            "widget_id", flat=True
        )
    )
