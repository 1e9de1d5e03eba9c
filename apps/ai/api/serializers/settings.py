"""The AI settings and the AI phrases: their inputs and documented shapes."""

from __future__ import annotations

from rest_framework import serializers

from apps.core.api.query import IdQueryField
from apps.core.api.serializers import (
    InputSerializer,
    StrictBooleanField,
    StrictCharField,
    StrictIntegerField,
)

from ... import phrases


class SettingsPatchInput(InputSerializer):
    enabled = StrictBooleanField(required=False, help_text="The master switch: with it off nothing replies.")
    rag_enabled = StrictBooleanField(required=False, help_text="True to give the assistant the knowledge-base chunks.")
    shadow_mode = StrictBooleanField(
        required=False, help_text="True to store AI answers as private notes (never shown, never accepting the chat)."
    )
    autonomous_tuning_enabled = StrictBooleanField(
        required=False,
        help_text=(
            "The master switch of tuning cycles: true lets a cycle run once its evidence and probation gates are open."
        ),
    )
    presence_context_enabled = StrictBooleanField(
        required=False,
        help_text=(
            "True to read operator presence: the assistant is told whether operators are online, and a handover "
            "with nobody online uses `handover_offline`."
        ),
    )
    takeover_timeout_sec = StrictIntegerField(
        required=False,
        min_value=30,
        max_value=86400,
        help_text=(
            "Seconds a person who accepted a chat may stay silent after a visitor message before the AI answers again"
            " (30 to 86400)."
        ),
    )
    handover_summary = StrictBooleanField(
        required=False,
        help_text="True to add a private note summarising the conversation when the AI hands a chat to people.",
    )


class SettingsQuery(InputSerializer):
    assistant_id = IdQueryField(required=False, help_text="The assistant `learning_target` follows.")


class EffectiveAssistantDoc(serializers.Serializer):
    id = serializers.IntegerField(help_text="The assistant's id.")
    name = serializers.CharField(help_text="The assistant's name.")


class LearningTargetDoc(serializers.Serializer):
    assistant_id = serializers.IntegerField(help_text="The assistant learning writes and reads follow.")
    name = serializers.CharField(help_text="The assistant's name.")


class SettingsDoc(serializers.Serializer):
    enabled = serializers.BooleanField(help_text="The master switch: with it off nothing replies.")
    rag_enabled = serializers.BooleanField(help_text="True when the assistant is given the knowledge-base chunks.")
    shadow_mode = serializers.BooleanField(
        help_text="True when AI answers are stored as private notes (never shown, never accepting the chat)."
    )
    autonomous_tuning_enabled = serializers.BooleanField(
        help_text=(
            "The master switch of tuning cycles: true lets a cycle run once its evidence and probation gates are open."
        )
    )
    presence_context_enabled = serializers.BooleanField(
        help_text=(
            "True when operator presence is read: the assistant is told whether operators are online, and a "
            "handover with nobody online uses `handover_offline`."
        )
    )
    takeover_timeout_sec = serializers.IntegerField(
        help_text=(
            "Seconds a person who accepted a chat may stay silent after a visitor message before the AI answers again."
        )
    )
    handover_summary = serializers.BooleanField(
        help_text="True when the AI adds a private note summarising the conversation as it hands a chat to people."
    )
    offline_outcome_mode = serializers.ChoiceField(
        choices=["handover_offline", "handover_unknown"],
        help_text=(
            "The phrase of a handover nobody can take: `handover_offline` while `presence_context_enabled`, "
            "else `handover_unknown`."
        ),
    )
    effective_assistant = EffectiveAssistantDoc(
        allow_null=True, help_text="The assistant that answers now; null when none."
    )
    legacy_persona = serializers.CharField(
        allow_null=True,
        help_text=(
            "The persona text of the configuration before assistants (`POST /ai/settings/migrate` seeds an "
            "assistant from it); null when empty."
        ),
    )
    learning_target = LearningTargetDoc(
        allow_null=True, help_text="The assistant learning writes and reads follow; null when none."
    )


class PhraseLanguagesInput(InputSerializer):
    """One phrase: language -> text (null resets that language)."""

    def get_fields(self):
        return {
            lang: StrictCharField(
                required=False,
                allow_null=True,
                allow_blank=True,
                trim_whitespace=False,
                help_text=f"The override in `{lang}`: plain text up to 500 characters; null resets it.",
            )
            for lang in phrases.LANGUAGES
        }


class PhrasesInput(InputSerializer):
    """The seven phrase keys, each an object of languages (or null: every language of it)."""

    def get_fields(self):
        return {
            key: PhraseLanguagesInput(
                required=False,
                allow_null=True,
                help_text=f"Overrides of `{key}` by language; null resets every language of it.",
            )
            for key in phrases.KEYS
        }


class PhraseDoc(serializers.Serializer):
    text = serializers.CharField(help_text="The text in use: the override, else the default.")
    source = serializers.ChoiceField(choices=["override", "default"], help_text="`override` or `default`.")
    default = serializers.CharField(help_text="The service's default text.")


class PhraseLanguagesDoc(serializers.Serializer):
    def get_fields(self):
        return {lang: PhraseDoc(help_text=f"The phrase in `{lang}`.") for lang in phrases.LANGUAGES}


class PhrasesDoc(serializers.Serializer):
    def get_fields(self):
        return {
            key: PhraseLanguagesDoc(
                help_text=f'The `{key}` phrase by language (English default: "{phrases.DEFAULTS[key]["en"]}").'
            )
            for key in phrases.KEYS
        }
