"""The vocabulary of widget settings: languages, devices, skins, icon presets, the text and colour
patterns, and the names that are not settings. Used by the field framework (settings_fields) and the
definition (settings_schema)."""

from __future__ import annotations

from dataclasses import dataclass

SCHEMA_VERSION = 4

LANGUAGES = ("ru", "en", "el", "de", "es", "ar", "zh")
DEFAULT_LANGUAGE_CHOICES = ("auto", *LANGUAGES)
DEVICES = ("desktop", "mobile")
TRANSLATABLE = ("widget_name", "widget_signature", "widget_greeting")
GENERATIONS = ("legacy", "new")

SKINS_URL = "/api/v1/widget/skins"
ICONS_URL = "/api/v1/widget/icons"
LANGUAGE_URL = "/api/v1/widget/language"


@dataclass(frozen=True)
class Skin:
    id: str
    name: str
    premium: bool


SKINS: tuple[Skin, ...] = (
    Skin("classic", "Classic", False),
    Skin("minimal", "Minimal", False),
    Skin("rounded", "Rounded", False),
    Skin("compact", "Compact", False),
    Skin("glass", "Glass", True),
    Skin("gradient", "Gradient", True),
    Skin("neon", "Neon", True),
    Skin("corporate", "Corporate", True),
)
SKIN_IDS = tuple(s.id for s in SKINS)

ICON_PRESETS: tuple[tuple[str, str], ...] = (
    ("chat_bubble", "Chat bubble"),
    ("chat_dots", "Chat bubble with dots"),
    ("chat_double", "Two chat bubbles"),
    ("message_square", "Square message"),
    ("headset", "Headset"),
    ("support_agent", "Support agent"),
    ("question", "Question mark"),
    ("envelope", "Envelope"),
    ("phone", "Phone"),
    ("hand_wave", "Waving hand"),
    ("sparkle", "Sparkle"),
    ("heart", "Heart"),
)
ICON_PRESET_IDS = tuple(i for i, _ in ICON_PRESETS)
CUSTOM_ICON_BODY = r"custom:[1-9][0-9]{0,17}"

# Bodies of `pattern` (matched with re.fullmatch; published as PCRE with \A...\z anchors).
SINGLE_LINE_TEXT = r"[^\x00-\x1F\x7F]*[^\x00-\x20\x7F][^\x00-\x1F\x7F]*"
MULTI_LINE_TEXT = r"[^\x00-\x09\x0B-\x1F\x7F]*[^\x00-\x20\x7F][^\x00-\x09\x0B-\x1F\x7F]*"
COLOR = r"#[0-9A-Fa-f]{6}"
HTTPS_URL = r"https://[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?(?::[0-9]{1,5})?(?:[/?#][^\x00-\x20\x7F]*)?"

# Names callers sometimes send that belong to other resources: refused with a pointer, never stored.
NOT_SETTINGS: dict[str, str] = {
    **dict.fromkeys(
        ("messengers", "messenger", "messenger_credentials", "channels", "tg", "vk", "wa"),
        "Messenger credentials are not widget settings; use /v1/messengers.",
    ),
    **dict.fromkeys(
        ("ai", "ai_settings", "assistant", "assistants", "ai_operator"),
        "AI configuration is not widget settings; use /v1/ai/settings and /v1/ai/assistants.",
    ),
    **dict.fromkeys(("map", "widget_map", "map_settings"), "The map subtree is not part of widget settings."),
    **dict.fromkeys(
        ("price_list", "pricelist", "widget_price_list"), "The price-list subtree is not part of widget settings."
    ),
    **dict.fromkeys(
        ("logo", "widget_logo", "logo_url"),
        "The logo is not part of widget settings; the launcher icon is `icon_preset`.",
    ),
    **dict.fromkeys(
        ("quick_phrases", "widget_quick_phrases", "quick_phrases_i18n"),
        "Quick phrases are not part of widget settings; AI assistants carry `quick_phrases`.",
    ),
}
