"""The one definition of widget settings: every field declared once (`FIELDS`) and the tuples derived
from it."""

from __future__ import annotations

from ..settings_fields import (
    BooleanField,
    ChoiceField,
    ChoiceListField,
    ColorField,
    Context,
    DeviceProfilesField,
    Field,
    IconField,
    IntegerChoiceField,
    IntegerField,
    LanguageTextsField,
    PrechatField,
    ReadOnlyField,
    TextField,
    TranslationsField,
    UrlField,
)
from ..settings_vocabulary import DEFAULT_LANGUAGE_CHOICES, ICONS_URL, LANGUAGE_URL, LANGUAGES, SKIN_IDS, SKINS_URL

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
    ChoiceField(
        "identity_verification",
        group="behaviour",
        choices=("off", "optional", "required"),
        default="off",
        description="Identity verification of `ChatWidget.setUser`: `off` (the details are kept as unverified), "
        "`optional` (a right `hash` joins the person's one contact, a wrong or missing one keeps the details as "
        "unverified), `required` (a wrong or missing `hash` is refused with 401 `identity_unverified`; anonymous "
        "visitors still chat). The hash is made with the identity secret (POST /v1/widget/identity-secret).",
    ),
    BooleanField(
        "require_2fa",
        group="security",
        default=False,
        public=False,
        description="Every human operator of the widget signs in to the console and Django admin with a second "
        "factor (a TOTP code or a recovery code); an operator without one enrols at the next sign-in.",
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
    PrechatField(
        "prechat",
        group="behaviour",
        description="The pre-chat form `{when, fields}`: `when` `never` | `always` | `offline`; each field "
        "`{key, type, label_i18n, required, options?}`. While `when` is not `never` it is the one pre-chat form "
        "(`widget_prechat_form_enabled` and `widget_prechat_fields` then have no effect).",
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
                "available": {
                    "type": "boolean",
                    "description": "False when the translation store is missing (`reason` `schema_unavailable`).",
                },
                "enabled": {"type": "boolean", "description": "`widget_auto_translate_custom_texts`."},
                "reason": {
                    "type": ["string", "null"],
                    "description": "`schema_unavailable`, `credential_missing`, or null.",
                },
                "revision": {"type": "integer", "description": "The language policy revision."},
                "total": {"type": "integer", "description": "How many translations there are."},
                "counts": {
                    "type": "object",
                    "description": "Translations per state.",
                    "required": ["ready", "stale", "pending", "failed"],
                    "properties": {
                        k: {"type": "integer", "description": f"Translations `{k}`."}
                        for k in ("ready", "stale", "pending", "failed")
                    },
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
