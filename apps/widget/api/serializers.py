"""Output shapes of the widget routes (documentation serializers) and their inputs.

The settings object itself is not declared here: `WidgetSettingsDoc` and `WidgetSettingsPatchDoc`
are markers whose OpenAPI schemas `apps.widget.api.schema` generates from `settings_schema`.
"""

from __future__ import annotations

from rest_framework import serializers

from apps.core.api.serializers import InputSerializer, UploadField

from .. import hours, settings_schema
from ..icons import CONTENT_TYPES, ICON_MAX_BYTES, ICON_MAX_SIDE, ICON_MIN_SIDE
from . import schema  # noqa: F401  (registers the OpenAPI extensions of the markers below)


class WidgetSettingsDoc(serializers.Serializer):
    """Marker: every settings field (schema generated from settings_schema)."""


class WidgetSettingsPatchDoc(serializers.Serializer):
    """Marker: a PATCH body (schema generated from settings_schema)."""


class SettingsSchemaDoc(serializers.Serializer):
    """Marker: the schema document (schema in apps.widget.api.schema)."""


class WidgetSettingsEnvelope(serializers.Serializer):
    data = WidgetSettingsDoc(help_text="The widget settings.")


class SettingsSchemaEnvelope(serializers.Serializer):
    data = SettingsSchemaDoc(help_text="The settings schema document.")


class LanguageInput(InputSerializer):
    """`{widget_default_language}`; the value is validated by its settings definition."""

    widget_default_language = serializers.JSONField()


class LanguageDoc(serializers.Serializer):
    widget_default_language = serializers.ChoiceField(
        choices=settings_schema.DEFAULT_LANGUAGE_CHOICES,
        help_text="`auto` or a language code: the widget's default language.",
    )
    is_default = serializers.BooleanField(
        help_text="true while no value is stored: the implicit default of the widget's generation applies "
        "(legacy widgets ru, new widgets auto)."
    )
    effective_language = serializers.ChoiceField(
        choices=settings_schema.LANGUAGES,
        help_text="The concrete language without a visitor: the value itself, or for `auto` the fallback language "
        "(with a visitor, `auto` follows the browser language when it is enabled).",
    )


class LanguageEnvelope(serializers.Serializer):
    data = LanguageDoc(help_text="The widget's language.")


class SkinDoc(serializers.Serializer):
    id = serializers.ChoiceField(choices=settings_schema.SKIN_IDS, help_text="Value of `widget_skin`.")
    name = serializers.CharField(help_text="The skin's name.")
    premium = serializers.BooleanField(help_text="Needs a plan with premium skins.")
    available = serializers.BooleanField(help_text="This widget's plan includes the skin (it may be written).")


class SkinListEnvelope(serializers.Serializer):
    data = SkinDoc(many=True, help_text="Every skin.")


class IconPresetDoc(serializers.Serializer):
    id = serializers.ChoiceField(choices=settings_schema.ICON_PRESET_IDS, help_text="Value of `icon_preset`.")
    name = serializers.CharField(help_text="The preset's name.")


class IconPresetListEnvelope(serializers.Serializer):
    data = IconPresetDoc(many=True, help_text="Every icon preset.")


class IconUploadDoc(serializers.Serializer):
    file = UploadField(
        content_types=tuple(CONTENT_TYPES.values()),
        help_text=f"A static PNG, an animated WebP or a GIF (static or animated), at most {ICON_MAX_BYTES} bytes, "
        f"each side {ICON_MIN_SIDE} to {ICON_MAX_SIDE} pixels; the name's extension (.png, .webp, .gif) must "
        "match the content, which is checked.",
    )


class IconDoc(serializers.Serializer):
    icon_preset = serializers.CharField(help_text="`custom:{file_id}`: send it as `icon_preset` to use the icon.")
    file_id = serializers.IntegerField(help_text="Id of the stored file (GET /v1/files/{id}).")
    icon_format = serializers.ChoiceField(choices=["png", "webp", "gif"], help_text="`png`, `webp` or `gif`.")
    animated = serializers.BooleanField(help_text="True for an animated icon.")
    width = serializers.IntegerField(help_text="Width in pixels.")
    height = serializers.IntegerField(help_text="Height in pixels.")
    size = serializers.IntegerField(help_text="Bytes.")
    url = serializers.CharField(help_text="Public URL the visitor widget loads the icon from.")


class IconEnvelope(serializers.Serializer):
    data = IconDoc(help_text="The stored icon.")


class EmbedDoc(serializers.Serializer):
    button_guid = serializers.CharField(help_text="The widget's public 32-character hex guid.")
    script_url = serializers.CharField(
        help_text="`{origin}/static/widget/loader.js?guid={button_guid}`: origin is the configured embed origin "
        "(WIDGET_EMBED_ORIGIN) or else the scheme and host this API was called on."
    )
    snippet = serializers.CharField(help_text='`<script src="{script_url}" async></script>`, to paste before </body>.')


class EmbedEnvelope(serializers.Serializer):
    data = EmbedDoc(help_text="The embed code.")


class CachePurgeDoc(serializers.Serializer):
    purged = serializers.BooleanField(help_text="Always true: the served widget cache was purged.")
    widget_id = serializers.IntegerField(help_text="The widget's id.")


class CachePurgeEnvelope(serializers.Serializer):
    data = CachePurgeDoc(help_text="The purge's result.")


_HHMM = {"type": "string", "pattern": "^(([01][0-9]|2[0-3]):[0-5][0-9]|24:00)$"}
BUSINESS_HOURS_SCHEMA = {
    "type": "object",
    "required": list(hours.MEMBERS),
    "additionalProperties": False,
    "properties": {
        "enabled": {"type": "boolean", "description": "false (the default): always open."},
        "timezone": {"type": "string", "description": "IANA time zone name; the week is its wall-clock time."},
        "weekly": {
            "type": "object",
            "description": "Opening intervals of every day of the week, by day name.",
            "required": list(hours.DAYS),
            "additionalProperties": False,
            "properties": {
                day: {
                    "type": "array",
                    "maxItems": hours.MAX_INTERVALS,
                    "items": {"type": "array", "items": _HHMM, "minItems": 2, "maxItems": 2},
                    "description": "0..4 intervals [start, end]: start before end, `24:00` allowed as an end, "
                    "no overlaps (one may start where the previous ends); [] is closed all day.",
                }
                for day in hours.DAYS
            },
        },
        "holidays": {
            "type": "array",
            "maxItems": hours.MAX_HOLIDAYS,
            "items": {"type": "string", "format": "date"},
            "description": "Dates closed all day (local to `timezone`), each once.",
        },
        "outside_hours": {
            "type": "string",
            "enum": list(hours.MODES),
            "description": "While closed: `offline_form` (the widget offers the offline form), `ai_only` (the AI "
            "operator answers and never hands over; the `outside_hours` phrase replaces the hand-over), `hidden` "
            "(no launcher; an open conversation stays readable).",
        },
    },
}
BUSINESS_HOURS_ENVELOPE = {
    "type": "object",
    "required": ["data"],
    "properties": {"data": {**BUSINESS_HOURS_SCHEMA, "description": "The widget's business hours."}},
}


class IdentitySecretDoc(serializers.Serializer):
    secret = serializers.CharField(
        help_text="The new identity secret, shown this once: keep it on the site's server and compute "
        "`hash` = lowercase hex HMAC-SHA256 of the person's id under it (its text as UTF-8 bytes)."
    )
    created_at = serializers.DateTimeField(help_text="When it was made; the one before it stays valid 24 hours more.")
