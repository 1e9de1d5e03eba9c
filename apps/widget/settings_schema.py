"""THE one definition of widget settings (the field kinds are in settings_fields, the vocabulary of
languages, skins and patterns in settings_vocabulary; both are re-exported here).

Every settings field is declared once below (`FIELDS`), with its JSON type, constraints, defaults
(legacy and new widgets), PATCH semantics, nullability and read-only flag. Everything else is
derived from these declarations and nothing else:

- PATCH validation (`parse_patch`, `merge`, `check_merged`),
- the values `GET /v1/widget/settings` shows (`effective_values`),
- `GET /v1/widget/settings/schema` (`schema_document`),
- the OpenAPI components of the settings bodies (`openapi_object`),
- the public visitor config's settings members (`public_values`).

Conventions every field follows:
- Types are strict: a JSON integer is never accepted as a string or a float, nor a boolean as 0/1.
- A key that is not stored takes its render default (`effective_default`); an explicit null on
  PATCH removes the stored key. The six localization-policy fields refuse null.
- `pattern` is published as PCRE with delimiters (`/\\A(?:...)\\z/u`); the server matches the same
  body with Python's `re.fullmatch`. Bodies use only the syntax both engines share.
- Legacy widgets (created before the cutoff of `apps.widget.services.LEGACY_CUTOFF`) and new widgets
  differ only in the implicit localization defaults the spec names.

Changing a field (adding, removing, or changing a constraint or default) changes
`definition_digest()`; a test pins it, so the change must also bump `SCHEMA_VERSION`.
"""

from __future__ import annotations

import copy
import hashlib
import json
from typing import Any

from .settings_fields import CLEAR as CLEAR
from .settings_fields import INVALID as INVALID
from .settings_fields import BooleanField as BooleanField
from .settings_fields import ChoiceField as ChoiceField
from .settings_fields import ChoiceListField as ChoiceListField
from .settings_fields import ColorField as ColorField
from .settings_fields import Context as Context
from .settings_fields import DeviceProfilesField as DeviceProfilesField
from .settings_fields import Field as Field
from .settings_fields import IconField as IconField
from .settings_fields import IntegerChoiceField as IntegerChoiceField
from .settings_fields import IntegerField as IntegerField
from .settings_fields import Invalid as Invalid
from .settings_fields import LanguageTextsField as LanguageTextsField
from .settings_fields import ReadOnlyField as ReadOnlyField
from .settings_fields import StringField as StringField
from .settings_fields import TextField as TextField
from .settings_fields import TranslationsField as TranslationsField
from .settings_fields import UrlField as UrlField
from .settings_fields import pcre as pcre
from .settings_vocabulary import COLOR as COLOR
from .settings_vocabulary import CUSTOM_ICON_BODY as CUSTOM_ICON_BODY
from .settings_vocabulary import DEFAULT_LANGUAGE_CHOICES as DEFAULT_LANGUAGE_CHOICES
from .settings_vocabulary import DEVICES as DEVICES
from .settings_vocabulary import GENERATIONS as GENERATIONS
from .settings_vocabulary import HTTPS_URL as HTTPS_URL
from .settings_vocabulary import ICON_PRESET_IDS as ICON_PRESET_IDS
from .settings_vocabulary import ICON_PRESETS as ICON_PRESETS
from .settings_vocabulary import ICONS_URL as ICONS_URL
from .settings_vocabulary import LANGUAGE_URL as LANGUAGE_URL
from .settings_vocabulary import LANGUAGES as LANGUAGES
from .settings_vocabulary import MULTI_LINE_TEXT as MULTI_LINE_TEXT
from .settings_vocabulary import NOT_SETTINGS as NOT_SETTINGS
from .settings_vocabulary import SCHEMA_VERSION as SCHEMA_VERSION
from .settings_vocabulary import SINGLE_LINE_TEXT as SINGLE_LINE_TEXT
from .settings_vocabulary import SKIN_IDS as SKIN_IDS
from .settings_vocabulary import SKINS as SKINS
from .settings_vocabulary import SKINS_URL as SKINS_URL
from .settings_vocabulary import TRANSLATABLE as TRANSLATABLE
from .settings_vocabulary import Skin as Skin

# --- the definition ---------------------------------------------------------------------------------------


def _toggle(name: str, description: str, *, profile: bool = False) -> BooleanField:
    return BooleanField(
        name, group="toggles", description=description, default=True, semantics="on_when_cleared", profile=profile
    )


def _color(name: str, description: str, default: str) -> ColorField:
    return ColorField(name, group="colours", description=description, default=default)


def _offset(name: str, description: str, default: int, maximum: int = 400) -> IntegerField:
    return IntegerField(
        name, group="placement", description=description, default=default, minimum=0, maximum=maximum, profile=True
    )


def _available_skins(ctx: Context) -> frozenset[str]:
    return ctx.available_skins


_TEXTS: list[Field] = [
    TextField(
        "widget_name",
        group="texts",
        max_length=60,
        description="Title in the chat window header. Translatable (`widget_text_translations`).",
    ),
    TextField(
        "widget_signature",
        group="texts",
        max_length=120,
        description="Subtitle under the title (e.g. 'We answer within minutes'). Translatable.",
    ),
    TextField(
        "widget_greeting",
        group="texts",
        max_length=500,
        multiline=True,
        description="Greeting bubble shown next to the launcher and as the first line of a new chat. Translatable.",
    ),
    TextField(
        "widget_input_placeholder", group="texts", max_length=100, description="Placeholder of the message input."
    ),
    TextField(
        "widget_offline_message",
        group="texts",
        max_length=500,
        multiline=True,
        description="Text above the offline form while no operator is online.",
    ),
]

_DEFINITION: list[Field] = [
    *_TEXTS,
    _color("widget_color_primary", "Main colour: header, send button, links.", "#1E88E5"),
    _color("widget_color_primary_text", "Text and icons drawn on the main colour.", "#FFFFFF"),
    _color("widget_color_background", "Chat window background.", "#FFFFFF"),
    _color("widget_color_text", "Body text colour.", "#1F2933"),
    _color("widget_color_agent_bubble", "Background of operator messages.", "#F1F3F4"),
    _color("widget_color_visitor_bubble", "Background of visitor messages.", "#1E88E5"),
    _color("widget_color_button", "Launcher button background.", "#1E88E5"),
    ChoiceField(
        "widget_skin",
        group="look",
        choices=SKIN_IDS,
        default="classic",
        catalog_url=SKINS_URL,
        available=_available_skins,
        unavailable="A premium skin not included in this widget's plan (see GET /v1/widget/skins).",
        description="Visual skin; the catalogue (with `premium` and `available`) is GET /v1/widget/skins.",
    ),
    ChoiceField(
        "widget_theme",
        group="look",
        choices=("light", "dark", "auto"),
        default="light",
        description="Light or dark palette; `auto` follows the visitor's system preference.",
    ),
    ChoiceField(
        "widget_font_family",
        group="look",
        choices=("system", "inter", "roboto", "open_sans", "pt_sans", "montserrat"),
        default="system",
        description="Font of the chat window; `system` uses the visitor's system font.",
    ),
    IntegerField(
        "widget_border_radius",
        group="look",
        minimum=0,
        maximum=32,
        default=12,
        description="Corner radius of the chat window and bubbles, in CSS pixels.",
    ),
    ChoiceField(
        "widget_position",
        group="placement",
        choices=("bottom_right", "bottom_left", "top_right", "top_left"),
        default="bottom_right",
        profile=True,
        description="Corner of the page the launcher sits in.",
    ),
    _offset("widget_offset_x", "Horizontal distance of the launcher from its corner, in CSS pixels.", 20),
    _offset("widget_offset_y", "Vertical distance of the launcher from its corner, in CSS pixels.", 20),
    _offset("widget_chat_offset_x", "Horizontal distance of the open chat window from its corner, in CSS pixels.", 20),
    _offset(
        "widget_chat_offset_y",
        "Vertical distance of the open chat window from its corner, in CSS pixels.",
        90,
        maximum=600,
    ),
    IntegerChoiceField(
        "widget_button_size",
        group="placement",
        choices=(50, 75, 100),
        default=75,
        profile=True,
        description="Launcher diameter in CSS pixels: 50, 75 or 100.",
    ),
    IntegerField(
        "widget_chat_width",
        group="placement",
        minimum=300,
        maximum=600,
        default=370,
        profile=True,
        description="Width of the open chat window in CSS pixels (mobile renders full width unless a "
        "mobile profile overrides it).",
    ),
    IntegerField(
        "widget_chat_height",
        group="placement",
        minimum=400,
        maximum=800,
        default=600,
        profile=True,
        description="Height of the open chat window in CSS pixels.",
    ),
    IntegerField(
        "widget_z_index",
        group="placement",
        minimum=1,
        maximum=2147483647,
        default=2147483000,
        description="CSS z-index of the launcher and window, for pages with their own overlays.",
    ),
    IconField(
        "icon_preset",
        group="icon",
        default="chat_bubble",
        catalog_url=ICONS_URL,
        profile=True,
        description="Launcher icon: a preset id (GET /v1/widget/icons) or `custom:{file_id}` returned by "
        "POST /v1/widget/icons.",
    ),
    ChoiceField(
        "icon_custom_animated",
        group="icon",
        choices=("static", "spin", "spiral"),
        default="static",
        aliases={True: "spin", False: "static"},
        profile=True,
        description="Launcher icon motion: static, spin or spiral. Boolean aliases: true is spin, false is "
        "static; read back as the string.",
    ),
    _toggle(
        "widget_show_button",
        "Show the launcher button (off: the chat opens only from the page's own script call).",
        profile=True,
    ),
    _toggle("widget_show_greeting", "Show the greeting bubble next to the launcher.", profile=True),
    _toggle("widget_show_agent_avatars", "Show operator avatars in the header and next to their messages."),
    _toggle("widget_show_agent_names", "Show operator names in the header and next to their messages."),
    _toggle("widget_show_typing_indicator", "Show the operator typing indicator."),
    _toggle("widget_show_rating", "Offer the visitor to rate the chat."),
    _toggle("widget_show_offline_form", "Show the offline form while no operator is online."),
    _toggle("widget_show_file_upload", "Let visitors attach files."),
    _toggle("widget_show_emoji_picker", "Show the emoji picker."),
    _toggle("widget_show_unread_badge", "Show the unread-messages badge on the launcher."),
    _toggle("widget_show_branding", "Show the service's 'powered by' line."),
    ChoiceField(
        "operators_display_mode",
        group="behaviour",
        choices=("online", "all", "single", "hidden"),
        default="online",
        description="Operators shown in the header: `online` (header-visible operators who are online), "
        "`all` (every header-visible operator), `single` (one representative), `hidden`.",
    ),
    ChoiceField(
        "rating_mode",
        group="behaviour",
        choices=("on_request", "after_close", "off"),
        default="on_request",
        description="When the widget asks for a rating: `on_request` (only when an operator requests one), "
        "`after_close` (also when the chat closes), `off` (never; the visitor rating route answers 409 "
        "`rating_off`).",
    ),
    ChoiceField(
        "rating_scale",
        group="behaviour",
        choices=("five", "thumbs"),
        default="five",
        description="`five`: five stars (1 to 5); `thumbs`: thumbs down and up, stored as 1 and 5.",
    ),
    LanguageTextsField(
        "rating_prompt_i18n",
        group="behaviour",
        text=TextField("rating_prompt", group="behaviour", max_length=200, description="The rating question."),
        description="The rating question per language `{lang: text}`; a language without one shows the "
        "built-in phrase. Replaced whole.",
    ),
    ChoiceField(
        "widget_offline_mode",
        group="behaviour",
        choices=("form", "chat", "hide"),
        default="form",
        description="While no operator is online: `form` shows the offline form, `chat` keeps the chat "
        "open (messages wait), `hide` hides the launcher.",
    ),
    IntegerField(
        "widget_greeting_delay_sec",
        group="behaviour",
        minimum=0,
        maximum=600,
        default=3,
        profile=True,
        description="Seconds after page load before the greeting bubble appears.",
    ),
    IntegerField(
        "widget_auto_open_delay_sec",
        group="behaviour",
        minimum=0,
        maximum=3600,
        default=0,
        profile=True,
        description="Seconds after page load before the chat window opens by itself; 0 never opens it.",
    ),
    BooleanField(
        "widget_sound_enabled", group="behaviour", default=True, description="Play a sound on a new operator message."
    ),
    BooleanField(
        "typing_preview",
        group="behaviour",
        default=False,
        description="Operators see what the visitor is typing before it is sent (at most 500 characters, twice a "
        "second; never stored); the widget tells the visitor so.",
    ),
    BooleanField(
        "widget_prechat_form_enabled",
        group="behaviour",
        default=False,
        description="Ask for the visitor's contact details before the first message.",
    ),
    ChoiceListField(
        "widget_prechat_fields",
        group="behaviour",
        choices=("name", "email", "phone"),
        min_items=1,
        max_items=3,
        default=["name", "email"],
        description="Fields of the pre-chat form, in display order.",
    ),
    UrlField(
        "widget_privacy_policy_url",
        group="behaviour",
        description="Privacy policy linked from the pre-chat and offline forms; null shows no link.",
    ),
    ChoiceField(
        "widget_default_language",
        group="localization",
        choices=DEFAULT_LANGUAGE_CHOICES,
        default="auto",
        legacy_default="ru",
        policy=True,
        catalog_url=LANGUAGE_URL,
        description="Language the widget starts in; `auto` follows the visitor's browser. Also "
        "readable and writable alone at /v1/widget/language.",
    ),
    ChoiceListField(
        "widget_supported_languages",
        group="localization",
        choices=LANGUAGES,
        min_items=1,
        max_items=len(LANGUAGES),
        default=["ru", "en"],
        policy=True,
        description="Enabled locales: offered in the language switcher and allowed as keys of "
        "`widget_text_translations`.",
    ),
    ChoiceField(
        "widget_fallback_language",
        group="localization",
        choices=LANGUAGES,
        default="en",
        legacy_default="ru",
        policy=True,
        description="Language used when the visitor's language (with `auto`) is not enabled.",
    ),
    BooleanField(
        "widget_auto_translate_custom_texts",
        group="localization",
        default=False,
        policy=True,
        public=False,
        description="Translate the custom texts into enabled locales with AI (manual translations win).",
    ),
    ChoiceField(
        "widget_content_source_language",
        group="localization",
        choices=LANGUAGES,
        default="ru",
        policy=True,
        description="Language the custom texts (`widget_name`, `widget_signature`, `widget_greeting`) are "
        "written in; the source of AI translations.",
    ),
    BooleanField(
        "widget_show_lang_switcher",
        group="localization",
        default=True,
        policy=True,
        description="Show the language switcher (with more than one enabled locale).",
    ),
    TranslationsField(
        "widget_text_translations",
        group="localization",
        texts=lambda: _TEXTS[:3],
        description="Manual translations: `{locale: {widget_name?, widget_signature?, "
        "widget_greeting?}}` keyed by enabled locales. Replaced whole; {} clears.",
    ),
    DeviceProfilesField(
        "device_profiles",
        group="device_profiles",
        leaves=lambda: [f for f in _DEFINITION if f.profile],
        description="Sparse overrides per device (`desktop`, `mobile`) of the profile-overridable "
        "fields; merged deeply on PATCH.",
    ),
    ReadOnlyField(
        "widget_id",
        group="meta",
        json_type="integer",
        openapi={"type": "integer"},
        description="Id of the widget these settings belong to.",
    ),
    ReadOnlyField(
        "api_enabled",
        group="meta",
        json_type="boolean",
        openapi={"type": "boolean"},
        description="Whether 'Allow widget API (JS and REST)' is on; changed in the web cabinet only.",
    ),
    ReadOnlyField(
        "widget_language_policy_revision",
        group="meta",
        json_type="integer",
        openapi={"type": "integer", "minimum": 0},
        description="Increments whenever a localization-policy field or the translation matrix changes.",
    ),
    ReadOnlyField(
        "widget_translation_revision",
        group="meta",
        json_type="integer",
        openapi={"type": "integer", "minimum": 0},
        description="Alias of `widget_language_policy_revision`.",
    ),
    ReadOnlyField(
        "widget_translation_status",
        group="meta",
        json_type="object",
        openapi={
            "type": "object",
            "required": ["available", "enabled", "reason", "revision", "total", "counts"],
            "properties": {
                "available": {"type": "boolean"},
                "enabled": {"type": "boolean"},
                "reason": {"type": ["string", "null"]},
                "revision": {"type": "integer"},
                "total": {"type": "integer"},
                "counts": {
                    "type": "object",
                    "required": ["ready", "stale", "pending", "failed"],
                    "properties": {k: {"type": "integer"} for k in ("ready", "stale", "pending", "failed")},
                },
            },
        },
        description="AI translation state `{available, enabled, reason, revision, total, counts: {ready, "
        "stale, pending, failed}}`; `available:false` with `reason: schema_unavailable` and "
        "zero counts while the translation store is missing.",
    ),
    ReadOnlyField(
        "updated_at",
        group="meta",
        json_type="string",
        openapi={"type": "string", "format": "date-time"},
        description="Last successful settings write (the widget's creation time before any write).",
    ),
]

FIELDS: dict[str, Field] = {f.name: f for f in _DEFINITION}
WRITABLE: tuple[str, ...] = tuple(f.name for f in _DEFINITION if not f.read_only)
READ_ONLY: tuple[str, ...] = tuple(f.name for f in _DEFINITION if f.read_only)
POLICY_FIELDS: tuple[str, ...] = tuple(f.name for f in _DEFINITION if f.policy)
PROFILE_FIELDS: tuple[str, ...] = tuple(f.name for f in _DEFINITION if f.profile)
# Fields whose change bumps the language-policy revision.
REVISION_FIELDS: tuple[str, ...] = (*POLICY_FIELDS, "widget_text_translations")

assert len(FIELDS) == len(_DEFINITION), "duplicate settings field names"
assert len(POLICY_FIELDS) == 6, POLICY_FIELDS
assert set(READ_ONLY) == {
    "widget_id",
    "api_enabled",
    "widget_language_policy_revision",
    "widget_translation_revision",
    "widget_translation_status",
    "updated_at",
}


# --- the operations derived from the definition -----------------------------------------------------------


def parse_patch(body: Any, ctx: Context) -> tuple[dict[str, Any], dict[str, list[str]]]:
    """Validate a PATCH body field by field. Returns (delta, errors): `delta` maps names to canonical
    values, CLEAR (explicit null), or a device-profiles delta. Nothing is dropped: every member is
    either in `delta` or named in `errors`."""
    if not isinstance(body, dict):
        return {}, {"body": ["Expected a JSON object of settings fields."]}
    errors: dict[str, list[str]] = {}
    delta: dict[str, Any] = {}
    for name, value in body.items():
        definition = FIELDS.get(name)
        if definition is None:
            errors[name] = [NOT_SETTINGS.get(name, "Unknown field; GET /v1/widget/settings/schema lists every field.")]
        elif definition.read_only:
            errors[name] = ["Read-only field; it cannot be written."]
        else:
            parsed = definition.parse(value, ctx, name, errors)
            if parsed is not INVALID:
                delta[name] = parsed
    return delta, errors


def merge(stored: dict[str, Any], delta: dict[str, Any]) -> dict[str, Any]:
    """The stored keys after applying `delta` (a copy; `stored` is not changed)."""
    result = copy.deepcopy(stored)
    for name, value in delta.items():
        if name == "device_profiles":
            value = DeviceProfilesField.merge(result.get(name), value)
        if value is CLEAR:
            result.pop(name, None)
        else:
            result[name] = copy.deepcopy(value)
    return result


def check_merged(values: dict[str, Any], ctx: Context, *, delta: dict[str, Any]) -> dict[str, list[str]]:
    """Rules across fields, on the merged stored keys: the matrix may name enabled locales only."""
    errors: dict[str, list[str]] = {}
    effective = effective_values(values, ctx)
    enabled = set(effective["widget_supported_languages"])
    outside = [loc for loc in effective["widget_text_translations"] if loc not in enabled]
    if not outside:
        return errors
    if "widget_text_translations" in delta:
        for locale in outside:
            errors[f"widget_text_translations.{locale}"] = [
                "Not an enabled locale; add it to widget_supported_languages first (or in the same PATCH)."
            ]
    else:
        errors["widget_supported_languages"] = [
            f"The translation matrix has texts for {', '.join(outside)}; keep these locales enabled or replace "
            "widget_text_translations in the same PATCH."
        ]
    return errors


def effective_values(stored: dict[str, Any], ctx: Context) -> dict[str, Any]:
    """Every writable field: its stored value, else its effective default."""
    return {
        name: copy.deepcopy(stored[name]) if name in stored else FIELDS[name].effective_default(ctx)
        for name in WRITABLE
    }


def revision_changed(before: dict[str, Any], after: dict[str, Any], ctx: Context) -> bool:
    old, new = effective_values(before, ctx), effective_values(after, ctx)
    return any(old[name] != new[name] for name in REVISION_FIELDS)


def active_profiles(profiles: dict[str, Any]) -> dict[str, Any]:
    """Device profiles as rendered: disabled profiles (`enabled: false`) fall back to the base settings."""
    return {
        device: {k: v for k, v in overrides.items() if k != "enabled"}
        for device, overrides in profiles.items()
        if overrides.get("enabled", True)
    }


def public_values(stored: dict[str, Any], ctx: Context) -> dict[str, Any]:
    """The `public` fields as the visitor widget renders them."""
    effective = effective_values(stored, ctx)
    out = {name: effective[name] for name in WRITABLE if FIELDS[name].public}
    if out.get("widget_skin") not in ctx.available_skins:  # a premium skin after a plan downgrade
        out["widget_skin"] = FIELDS["widget_skin"].effective_default(ctx)
    out["device_profiles"] = active_profiles(effective["device_profiles"])
    return out


def schema_document(ctx: Context) -> dict[str, Any]:
    return {"schema_version": SCHEMA_VERSION, "fields": {name: f.describe(ctx) for name, f in FIELDS.items()}}


def openapi_object(*, write: bool) -> dict[str, Any]:
    """JSON Schema of the settings object: as read (every field, read-only members marked) or as a
    PATCH body (writable fields only, all optional, null where it clears, nothing else accepted)."""
    fields = [f for f in _DEFINITION if write is False or not f.read_only]
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {f.name: f.openapi(write=write) for f in fields},
        "additionalProperties": False,
    }
    if not write:
        schema["required"] = [f.name for f in fields]
        schema["description"] = (
            "Every settings field with its effective value (the stored value, else the render default). "
            "GET /v1/widget/settings/schema describes each field."
        )
    else:
        schema["description"] = (
            "Any subset of the writable settings fields. Merge-safe: fields not sent keep their stored values. "
            "An explicit null removes the stored key (the render default applies); the six localization-policy "
            "fields refuse null. `device_profiles` merges deeply; `widget_text_translations` replaces the whole "
            "matrix. Unknown and read-only members are refused with 422 naming them."
        )
    return schema


def definition_digest() -> str:
    """A digest of the widget-independent definition (what `SCHEMA_VERSION` versions)."""
    ctx = Context()
    described = {name: f.describe(ctx) for name, f in FIELDS.items()}
    raw = json.dumps(described, sort_keys=True, ensure_ascii=True, default=str)
    return hashlib.sha256(raw.encode()).hexdigest()
