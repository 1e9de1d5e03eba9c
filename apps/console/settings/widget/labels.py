"""The widget builder's words: every setting's label and help as an owner reads them, the names of
the choices, and the sections the settings are grouped in.

The fields themselves come from the settings schema (`selectors.settings_schema_document`): a field
this table does not name still shows, under Advanced, with its name and the schema's description.
"""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _

# name -> (label, help)
LABELS = {
    # colours
    "widget_color_primary": (_("Main colour"), _("The header, the send button and links.")),
    "widget_color_primary_text": (_("Text on the main colour"), _("Text and icons drawn on the main colour.")),
    "widget_color_background": (_("Window background"), _("The background of the chat window.")),
    "widget_color_text": (_("Text colour"), _("The colour of the messages' text.")),
    "widget_color_agent_bubble": (_("Your team's messages"), _("The background of your operators' messages.")),
    "widget_color_visitor_bubble": (_("Visitor's messages"), _("The background of the visitor's own messages.")),
    "widget_color_button": (_("Launcher button colour"), _("The round button that opens the chat.")),
    # look
    "widget_skin": (_("Style"), _("The widget's overall style. Some styles need a paid plan.")),
    "widget_theme": (_("Light or dark"), _("Automatic follows the visitor's device setting.")),
    "widget_font_family": (_("Font"), _("The system font looks native on every device.")),
    "widget_border_radius": (_("Corner roundness"), _("In pixels, from 0 (square) to 32.")),
    # launcher
    "icon_preset": (_("Launcher icon"), _("A built-in icon, or one you uploaded below.")),
    "icon_custom_animated": (_("Icon motion"), _("Whether the launcher icon moves.")),
    "widget_button_size": (_("Launcher size"), _("The button's diameter in pixels.")),
    "widget_show_button": (
        _("Show the launcher button"),
        _("When off, the chat opens only from your page's own script."),
    ),
    "widget_show_unread_badge": (_("Count unread messages on the launcher"), ""),
    # placement
    "widget_position": (_("Corner"), _("Where on the page the launcher sits.")),
    "widget_offset_x": (_("Launcher distance from the side"), _("In pixels.")),
    "widget_offset_y": (_("Launcher distance from the edge"), _("In pixels, from the top or bottom edge.")),
    "widget_chat_offset_x": (_("Window distance from the side"), _("In pixels.")),
    "widget_chat_offset_y": (_("Window distance from the edge"), _("In pixels, from the top or bottom edge.")),
    "widget_chat_width": (_("Window width"), _("In pixels. On phones the window fills the screen.")),
    "widget_chat_height": (_("Window height"), _("In pixels.")),
    "widget_z_index": (
        _("Stacking order"),
        _("Raise or lower it only if your page's own pop-ups cover the chat or are covered by it."),
    ),
    # texts
    "widget_name": (_("Title"), _("Shown at the top of the chat window. Empty: a built-in title.")),
    "widget_signature": (_("Subtitle"), _("Under the title, for example: We answer within minutes.")),
    "widget_greeting": (
        _("Greeting"),
        _("Shown next to the launcher and as the first line of a new chat. Empty: a built-in greeting."),
    ),
    "widget_input_placeholder": (_("Message box hint"), _("The grey text in the empty message box.")),
    "widget_offline_message": (_("Offline form text"), _("Above the form visitors fill in while nobody is online.")),
    # languages
    "widget_default_language": (
        _("Starting language"),
        _("Automatic uses the visitor's browser language when it is one you offer."),
    ),
    "widget_supported_languages": (_("Languages you offer"), _("Visitors can switch between these.")),
    "widget_fallback_language": (
        _("Language when the visitor's is not offered"),
        _("Used with an automatic starting language."),
    ),
    "widget_content_source_language": (
        _("Language your texts are written in"),
        _("The title, subtitle and greeting above; automatic translations start from it."),
    ),
    "widget_show_lang_switcher": (_("Let visitors switch the language"), _("Shown when you offer more than one.")),
    "widget_auto_translate_custom_texts": (
        _("Translate your texts automatically"),
        _("Uses the AI operator's credential; translations you type below always win."),
    ),
    "widget_text_translations": (
        _("Your texts in other languages"),
        _("Leave a box empty to show your own text (or its automatic translation) in that language."),
    ),
    # behaviour
    "widget_show_greeting": (_("Show the greeting next to the launcher"), ""),
    "widget_greeting_delay_sec": (_("Greeting delay"), _("Seconds after the page opens.")),
    "widget_auto_open_delay_sec": (
        _("Open the chat by itself after"),
        _("Seconds after the page opens; 0 never opens it by itself."),
    ),
    "widget_sound_enabled": (_("Play a sound on a new reply"), ""),
    "widget_offline_mode": (_("While nobody is online"), _("What visitors see when no operator is online.")),
    "widget_show_offline_form": (_("Offer the offline form"), _("Visitors leave a message and their contact.")),
    "widget_prechat_form_enabled": (
        _("Ask for contact details before the chat"),
        _("Visitors introduce themselves before their first message."),
    ),
    "widget_prechat_fields": (_("Questions before the chat"), _("In the order visitors see them.")),
    "widget_privacy_policy_url": (
        _("Privacy policy address"),
        _("Linked from the forms. An address starting with https://; empty shows no link."),
    ),
    "widget_show_rating": (_("Let visitors rate the chat"), ""),
    "rating_mode": (_("When to ask for a rating"), ""),
    "rating_scale": (_("Rating scale"), ""),
    "rating_prompt_i18n": (
        _("Rating question"),
        _("Per language; leave a box empty for the built-in question."),
    ),
    "operators_display_mode": (_("Operators shown in the header"), ""),
    "widget_show_agent_avatars": (_("Show operators' photos"), ""),
    "widget_show_agent_names": (_("Show operators' names"), ""),
    "widget_show_typing_indicator": (_("Show when an operator is typing"), ""),
    "typing_preview": (
        _("Let operators see what visitors type before they send it"),
        _("The widget tells visitors so. Nothing unsent is stored."),
    ),
    "widget_show_file_upload": (_("Let visitors attach files"), ""),
    "widget_show_emoji_picker": (_("Show the emoji button"), ""),
    "widget_show_branding": (_("Show the \u201cpowered by\u201d line"), ""),
    "require_2fa": (
        _("Require two-factor sign-in"),
        _("Every operator of this widget signs in with a code from an authenticator app as well as the password."),
    ),
    "device_profiles": (
        _("Phones and computers"),
        _("Change a setting for one kind of device only. An empty box uses the setting above."),
    ),
    "enabled": (_("Use these changes"), _("Off keeps them but shows the settings above.")),
}

CHOICES = {
    "widget_theme": {"light": _("Light"), "dark": _("Dark"), "auto": _("Automatic")},
    "widget_font_family": {
        "system": _("System font"),
        "inter": "Inter",
        "roboto": "Roboto",
        "open_sans": "Open Sans",
        "pt_sans": "PT Sans",
        "montserrat": "Montserrat",
    },
    "widget_position": {
        "bottom_right": _("Bottom right"),
        "bottom_left": _("Bottom left"),
        "top_right": _("Top right"),
        "top_left": _("Top left"),
    },
    "icon_custom_animated": {"static": _("Still"), "spin": _("Spin"), "spiral": _("Spiral")},
    "widget_button_size": {50: _("Small"), 75: _("Medium"), 100: _("Large")},
    "operators_display_mode": {
        "online": _("Those online"),
        "all": _("Everyone"),
        "single": _("One person"),
        "hidden": _("Nobody"),
    },
    "rating_mode": {
        "on_request": _("When an operator asks"),
        "after_close": _("Also when the chat ends"),
        "off": _("Never"),
    },
    "rating_scale": {"five": _("Five stars"), "thumbs": _("Thumbs up or down")},
    "widget_offline_mode": {
        "form": _("Show the offline form"),
        "chat": _("Keep the chat open; messages wait"),
        "hide": _("Hide the widget"),
    },
    "widget_prechat_fields": {"name": _("Name"), "email": _("E-mail"), "phone": _("Phone")},
    "widget_default_language": {"auto": _("Automatic")},
}

# Languages by their own names, the way the widget's switcher shows them.
LANGUAGE_NAMES = {
    "ru": "Русский",
    "en": "English",
    "el": "Ελληνικά",
    "de": "Deutsch",
    "es": "Español",
    "ar": "العربية",
    "zh": "中文",
}

DEVICES = {"desktop": _("On computers"), "mobile": _("On phones")}
INHERIT = _("As above")
ON, OFF = _("On"), _("Off")
POSITION = _("Position %(n)s")
NOT_ASKED = _("(not asked)")
UPLOADED = _("Your icon no. %(n)s")
PAID = _("%(name)s (paid plans)")

# (slug, title, [(group title, [field names])]); fields no group names go to Advanced's last group.
SECTIONS = (
    (
        "appearance",
        _("Appearance"),
        (
            (
                _("Colours"),
                (
                    "widget_color_primary",
                    "widget_color_primary_text",
                    "widget_color_background",
                    "widget_color_text",
                    "widget_color_agent_bubble",
                    "widget_color_visitor_bubble",
                    "widget_color_button",
                ),
            ),
            (_("Look"), ("widget_skin", "widget_theme", "widget_font_family", "widget_border_radius")),
            (
                _("Launcher button"),
                (
                    "icon_preset",
                    "icon_custom_animated",
                    "widget_button_size",
                    "widget_show_button",
                    "widget_show_unread_badge",
                ),
            ),
            (
                _("Position and size"),
                (
                    "widget_position",
                    "widget_offset_x",
                    "widget_offset_y",
                    "widget_chat_offset_x",
                    "widget_chat_offset_y",
                    "widget_chat_width",
                    "widget_chat_height",
                ),
            ),
        ),
    ),
    (
        "texts",
        _("Texts and languages"),
        (
            (
                _("Texts"),
                (
                    "widget_name",
                    "widget_signature",
                    "widget_greeting",
                    "widget_input_placeholder",
                    "widget_offline_message",
                ),
            ),
            (
                _("Languages"),
                (
                    "widget_default_language",
                    "widget_supported_languages",
                    "widget_fallback_language",
                    "widget_content_source_language",
                    "widget_show_lang_switcher",
                    "widget_auto_translate_custom_texts",
                ),
            ),
            (_("Translations"), ("widget_text_translations",)),
        ),
    ),
    (
        "behaviour",
        _("Chat behaviour"),
        (
            (
                _("Greeting and opening"),
                (
                    "widget_show_greeting",
                    "widget_greeting_delay_sec",
                    "widget_auto_open_delay_sec",
                    "widget_sound_enabled",
                ),
            ),
            (_("While nobody is online"), ("widget_offline_mode", "widget_show_offline_form")),
            (
                _("Before the chat"),
                ("widget_prechat_form_enabled", "widget_prechat_fields", "widget_privacy_policy_url"),
            ),
            (_("Ratings"), ("widget_show_rating", "rating_mode", "rating_scale", "rating_prompt_i18n")),
            (
                _("In the chat"),
                (
                    "operators_display_mode",
                    "widget_show_agent_avatars",
                    "widget_show_agent_names",
                    "widget_show_typing_indicator",
                    "typing_preview",
                    "widget_show_file_upload",
                    "widget_show_emoji_picker",
                    "widget_show_branding",
                ),
            ),
        ),
    ),
    (
        "advanced",
        _("Advanced"),
        (
            (_("Page integration"), ("widget_z_index",)),
            (_("Operators' sign-in"), ("require_2fa",)),
            (_("Phones and computers"), ("device_profiles",)),
            (_("Other settings"), ()),
        ),
    ),
)


def label(name: str, member: dict) -> tuple[str, str]:
    """A field's label and help: the table's, else its name and the schema's description."""
    if name in LABELS:
        return LABELS[name]
    return name.replace("_", " ").capitalize(), member.get("description") or ""


def choice_label(name: str, value) -> str:
    if name in CHOICES and value in CHOICES[name]:
        return CHOICES[name][value]
    if isinstance(value, str) and value in LANGUAGE_NAMES:
        return LANGUAGE_NAMES[value]
    return str(value).replace("_", " ").capitalize()
