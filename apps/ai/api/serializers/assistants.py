"""Assistants and AI operators: their inputs and documented shapes."""

from __future__ import annotations

from rest_framework import serializers

from apps.core.api.serializers import (
    InputSerializer,
    LabelField,
    StrictBooleanField,
    StrictCharField,
    StrictFloatField,
    TenantPrimaryKeyField,
)

from ...models import PROVIDERS, Assistant
from .fields import LocaleMapField, PhraseListField, TextField

# --- assistants -------------------------------------------------------------------------------------------


class AssistantInput(InputSerializer):
    name = LabelField(max_length=200, allow_blank=False, help_text="The assistant's name, required; cannot be cleared.")
    enabled = StrictBooleanField(required=False, help_text="True to let the assistant answer.")
    is_default = StrictBooleanField(
        required=False, help_text="True to make it the default assistant; clears the others."
    )
    persona = TextField(max_length=4000, required=False, help_text="The persona text, up to 4000 characters.")
    system_prompt = TextField(max_length=20000, required=False, help_text="The system prompt, up to 20000 characters.")
    temperature = StrictFloatField(
        required=False,
        allow_null=True,
        min_value=0,
        max_value=2,
        help_text="Sampling temperature, 0 to 2; null for the provider's default.",
    )
    rag_enabled = StrictBooleanField(required=False, help_text="True to give the assistant the knowledge-base chunks.")
    cite_sources = StrictBooleanField(
        required=False, help_text="True to attach the knowledge-base documents an answer was built on as `sources`."
    )
    escalation_triggers = serializers.ListField(
        child=LabelField(max_length=200),
        max_length=50,
        required=False,
        help_text=(
            "Phrases that hand the chat to people when a visitor's message contains one (case-insensitive), at most 50."
        ),
    )
    greeting = TextField(max_length=1000, required=False, help_text="The greeting, up to 1000 characters.")
    quick_phrases = PhraseListField(required=False, help_text="Quick phrases offered to the visitor, at most 20.")
    greeting_i18n = LocaleMapField(
        child=TextField(max_length=1000), required=False, help_text="The greeting per language (the seven languages)."
    )
    quick_phrases_i18n = LocaleMapField(
        child=PhraseListField(), required=False, help_text="The quick phrases per language (the seven languages)."
    )
    provider = serializers.ChoiceField(
        choices=PROVIDERS,
        required=False,
        allow_null=True,
        help_text="The assistant's provider; not the credential's driver code. Null clears it.",
    )
    model = StrictCharField(
        max_length=200,
        required=False,
        allow_null=True,
        allow_blank=True,
        help_text="The model name; null or empty clears it.",
    )

    def validate_escalation_triggers(self, value):
        cleaned = [v.strip() for v in value]
        if any(not v for v in cleaned):
            raise serializers.ValidationError("Triggers must not be blank.")
        return cleaned

    def validate(self, attrs):
        for name in ("provider", "model"):
            if name in attrs and attrs[name] is None:
                attrs[name] = ""
        return attrs


class AssistantDoc(serializers.Serializer):
    id = serializers.IntegerField(help_text="The assistant's id.")
    name = serializers.CharField(help_text="The assistant's name.")
    enabled = serializers.BooleanField(help_text="True when the assistant may answer.")
    is_default = serializers.BooleanField(help_text="True for the widget's default assistant (at most one).")
    persona = serializers.CharField(help_text="The persona text.")
    system_prompt = serializers.CharField(help_text="The system prompt.")
    temperature = serializers.FloatField(
        allow_null=True, help_text="Sampling temperature, 0 to 2; null for the provider's default."
    )
    rag_enabled = serializers.BooleanField(help_text="True when the assistant is given the knowledge-base chunks.")
    cite_sources = serializers.BooleanField(
        help_text="An answer built on knowledge-base chunks carries `sources`: the documents they came from."
    )
    escalation_triggers = serializers.ListField(
        child=serializers.CharField(),
        help_text="Phrases that hand the chat to people when a visitor's message contains one (case-insensitive).",
    )
    greeting = serializers.CharField(help_text="The greeting.")
    quick_phrases = serializers.ListField(
        child=serializers.CharField(), help_text="Quick phrases offered to the visitor."
    )
    greeting_i18n = serializers.DictField(child=serializers.CharField(), help_text="The greeting per language.")
    quick_phrases_i18n = serializers.DictField(
        child=serializers.ListField(child=serializers.CharField()), help_text="The quick phrases per language."
    )
    provider = serializers.ChoiceField(
        choices=PROVIDERS,
        allow_null=True,
        help_text="The assistant's provider (not the credential's driver code); null when unset.",
    )
    model = serializers.CharField(allow_null=True, help_text="The model name; null when unset.")
    created_at = serializers.DateTimeField(help_text="When the assistant was created.")
    updated_at = serializers.DateTimeField(help_text="When the assistant was last changed.")


class AssistantCreatedDoc(serializers.Serializer):
    assistant = AssistantDoc(help_text="The assistant.")
    created = serializers.BooleanField(help_text="True when this call created it.")


class OperatorRefDoc(serializers.Serializer):
    id = serializers.IntegerField(help_text="The AI operator's agent id.")
    name = serializers.CharField(help_text="The AI operator's name.")


# --- operators --------------------------------------------------------------------------------------------


class AssistantField(TenantPrimaryKeyField):
    def __init__(self, **kwargs):
        super().__init__(queryset=Assistant.objects.all(), missing="422", **kwargs)


class OperatorInput(InputSerializer):
    assistant_id = AssistantField(
        source="assistant", help_text="The assistant the operator answers with; required on create."
    )
    name = LabelField(
        max_length=150, required=False, allow_blank=False, help_text="The name replies are attributed to."
    )
    show_in_header = StrictBooleanField(required=False, help_text="True to show the operator in the widget header.")
    status = serializers.ChoiceField(
        choices=["active", "paused", "retired"], required=False, help_text="`active`, `paused` or `retired`."
    )


class OperatorDoc(serializers.Serializer):
    id = serializers.IntegerField(help_text="The AI operator's agent id.")
    type = serializers.ChoiceField(choices=["ai"], help_text="`ai`.")
    assistant_id = serializers.IntegerField(
        allow_null=True, help_text="The assistant the operator answers with; null when none."
    )
    name = serializers.CharField(help_text="The name replies are attributed to.")
    show_in_header = serializers.BooleanField(help_text="True when the widget header shows the operator.")
    status = serializers.ChoiceField(
        choices=["active", "paused", "retired"],
        help_text="`active`, `paused` or `retired` (DELETE retires; `active` brings it back).",
    )
    created_at = serializers.DateTimeField(help_text="When the operator was created.")
