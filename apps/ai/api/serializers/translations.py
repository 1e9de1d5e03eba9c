"""The widget's machine translations: the regenerate input and documented shapes."""

from __future__ import annotations

from rest_framework import serializers

from apps.core.api.serializers import InputSerializer

from .fields import LOCALE_CHOICES


class RegenerateInput(InputSerializer):
    def get_fields(self):
        return {
            "fields": serializers.ListField(
                child=serializers.ChoiceField(choices=("widget_name", "widget_signature", "widget_greeting")),
                min_length=1,
                max_length=3,
                help_text=(
                    "Which widget texts to translate again: `widget_name`, `widget_signature`, `widget_greeting`."
                ),
            ),
            "locales": serializers.ListField(
                child=serializers.ChoiceField(choices=LOCALE_CHOICES),
                min_length=1,
                max_length=7,
                help_text="Into which of the seven languages.",
            ),
        }

    def validate(self, attrs):
        for name in ("fields", "locales"):
            if len(set(attrs[name])) != len(attrs[name]):
                raise serializers.ValidationError({name: ["Give each value once."]})
        return attrs


class TranslationCountsDoc(serializers.Serializer):
    ready = serializers.IntegerField(help_text="Translations ready.")
    stale = serializers.IntegerField(help_text="Translations missing or made from an older source text.")
    pending = serializers.IntegerField(help_text="Translations waiting for the provider.")
    failed = serializers.IntegerField(help_text="Translations that failed.")


class TranslationStatusDoc(serializers.Serializer):
    available = serializers.BooleanField(
        help_text="False when the translation store is missing (`reason` `schema_unavailable`, zero counts)."
    )
    enabled = serializers.BooleanField(help_text="True while auto-translation of custom texts is on.")
    reason = serializers.ChoiceField(
        choices=["schema_unavailable", "credential_missing"],
        allow_null=True,
        help_text="`schema_unavailable`, `credential_missing` (no active widget-wide provider credential), or null.",
    )
    revision = serializers.IntegerField(help_text="The widget's language policy revision.")
    total = serializers.IntegerField(help_text="How many translations there are.")
    counts = TranslationCountsDoc(help_text="Translations per state.")


class TranslationItemDoc(serializers.Serializer):
    locale = serializers.ChoiceField(choices=LOCALE_CHOICES, help_text="The translation's language.")
    field = serializers.ChoiceField(
        choices=("widget_name", "widget_signature", "widget_greeting"),
        help_text="`widget_name`, `widget_signature` or `widget_greeting`.",
    )
    state = serializers.ChoiceField(
        choices=["ready", "stale", "pending", "failed"], help_text="`ready`, `stale`, `pending` or `failed`."
    )
    has_text = serializers.BooleanField(help_text="True when a translated text is stored.")
    source_hash = serializers.CharField(help_text="A hash of the source text it was made from.")
    error = serializers.CharField(allow_null=True, help_text="Why it failed; null otherwise.")
    updated_at = serializers.DateTimeField(allow_null=True, help_text="When it last changed; null before the first.")


class TranslationsDoc(serializers.Serializer):
    status = TranslationStatusDoc(help_text="The translation status.")
    revision = serializers.IntegerField(help_text="The widget's language policy revision.")
    items = TranslationItemDoc(many=True, help_text="One item per field and enabled language.")


class TranslationsEnvelope(serializers.Serializer):
    data = TranslationsDoc(help_text="The translations and their status.")


class RegenerateJobDoc(serializers.Serializer):
    locale = serializers.ChoiceField(choices=LOCALE_CHOICES, help_text="The job's language.")
    field = serializers.ChoiceField(
        choices=("widget_name", "widget_signature", "widget_greeting"), help_text="The job's field."
    )


class RegenerateDoc(serializers.Serializer):
    accepted = serializers.IntegerField(help_text="How many jobs were accepted.")
    jobs = RegenerateJobDoc(many=True, help_text="The accepted jobs.")


class RegenerateEnvelope(serializers.Serializer):
    data = RegenerateDoc(help_text="The accepted regeneration.")
