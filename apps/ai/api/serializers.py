"""Inputs (strict: unknown members are 422) and documentation shapes of the AI configuration API."""

from __future__ import annotations

from rest_framework import serializers

from apps.agents.models import Agent
from apps.core.api.query import IdQueryField, MomentField
from apps.core.api.serializers import (
    InputSerializer,
    LabelField,
    StrictBooleanField,
    StrictCharField,
    StrictFloatField,
    StrictIntegerField,
    TenantPrimaryKeyField,
)

from .. import marketplace, phrases
from ..models import PROVIDERS, Alert, Assistant, Credential, DemandSignal

LOCALE_CHOICES = phrases.LANGUAGES
# What apps.learning.demand records: the schema's enum and the filter accept exactly these.
DEMAND_CATEGORIES = tuple(DemandSignal.Category.values)


# --- strict scalars ---------------------------------------------------------------------------------------


class TextField(StrictCharField):
    """Free text (persona, prompt, greeting): a JSON string, may be empty, no NUL."""

    def __init__(self, *, max_length: int, **kwargs):
        super().__init__(max_length=max_length, allow_blank=True, trim_whitespace=False, **kwargs)

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        if "\x00" in value:
            raise serializers.ValidationError("Must not contain NUL characters.")
        return value


class PhraseListField(serializers.ListField):
    def __init__(self, **kwargs):
        super().__init__(child=LabelField(max_length=200), max_length=20, **kwargs)


class LocaleMapField(serializers.DictField):
    """{locale: value} with locales among the seven."""

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        unknown = sorted(set(value) - set(LOCALE_CHOICES))
        if unknown:
            raise serializers.ValidationError(f"Unknown locales: {', '.join(unknown)}.")
        return value


# --- settings and phrases ---------------------------------------------------------------------------------


class SettingsPatchInput(InputSerializer):
    enabled = StrictBooleanField(required=False, help_text="The master switch: with it off nothing replies.")
    rag_enabled = StrictBooleanField(required=False, help_text="True to give the assistant the knowledge-base chunks.")
    shadow_mode = StrictBooleanField(
        required=False, help_text=("True to store AI answers as private notes (never shown, never accepting the chat).")
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
        help_text=("True to add a private note summarising the conversation when the AI hands a chat to people."),
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
        help_text=("True when AI answers are stored as private notes (never shown, never accepting the chat).")
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
        help_text=("True when the AI adds a private note summarising the conversation as it hands a chat to people.")
    )
    offline_outcome_mode = serializers.ChoiceField(
        choices=["handover_offline", "handover_unknown"],
        help_text=(
            "The phrase of a handover nobody can take: `handover_offline` while `presence_context_enabled`, "
            "else `handover_unknown`."
        ),
    )
    effective_assistant = EffectiveAssistantDoc(
        allow_null=True, help_text=("The assistant that answers now; null when none.")
    )
    legacy_persona = serializers.CharField(
        allow_null=True,
        help_text=(
            "The persona text of the configuration before assistants (`POST /ai/settings/migrate` seeds an "
            "assistant from it); null when empty."
        ),
    )
    learning_target = LearningTargetDoc(
        allow_null=True, help_text=("The assistant learning writes and reads follow; null when none.")
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


# --- assistants -------------------------------------------------------------------------------------------


class AssistantInput(InputSerializer):
    name = LabelField(max_length=200, allow_blank=False, help_text="The assistant's name, required; cannot be cleared.")
    enabled = StrictBooleanField(required=False, help_text="True to let the assistant answer.")
    is_default = StrictBooleanField(
        required=False, help_text=("True to make it the default assistant; clears the others.")
    )
    persona = TextField(max_length=4000, required=False, help_text="The persona text, up to 4000 characters.")
    system_prompt = TextField(max_length=20000, required=False, help_text="The system prompt, up to 20000 characters.")
    temperature = StrictFloatField(
        required=False,
        allow_null=True,
        min_value=0,
        max_value=2,
        help_text=("Sampling temperature, 0 to 2; null for the provider's default."),
    )
    rag_enabled = StrictBooleanField(required=False, help_text="True to give the assistant the knowledge-base chunks.")
    cite_sources = StrictBooleanField(
        required=False, help_text=("True to attach the knowledge-base documents an answer was built on as `sources`.")
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
        child=TextField(max_length=1000), required=False, help_text=("The greeting per language (the seven languages).")
    )
    quick_phrases_i18n = LocaleMapField(
        child=PhraseListField(), required=False, help_text=("The quick phrases per language (the seven languages).")
    )
    provider = serializers.ChoiceField(
        choices=PROVIDERS,
        required=False,
        allow_null=True,
        help_text=("The assistant's provider; not the credential's driver code. Null clears it."),
    )
    model = StrictCharField(
        max_length=200,
        required=False,
        allow_null=True,
        allow_blank=True,
        help_text=("The model name; null or empty clears it."),
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
        allow_null=True, help_text=("Sampling temperature, 0 to 2; null for the provider's default.")
    )
    rag_enabled = serializers.BooleanField(help_text="True when the assistant is given the knowledge-base chunks.")
    cite_sources = serializers.BooleanField(
        help_text="An answer built on knowledge-base chunks carries `sources`: the documents they came from."
    )
    escalation_triggers = serializers.ListField(
        child=serializers.CharField(),
        help_text=("Phrases that hand the chat to people when a visitor's message contains one (case-insensitive)."),
    )
    greeting = serializers.CharField(help_text="The greeting.")
    quick_phrases = serializers.ListField(
        child=serializers.CharField(), help_text=("Quick phrases offered to the visitor.")
    )
    greeting_i18n = serializers.DictField(child=serializers.CharField(), help_text="The greeting per language.")
    quick_phrases_i18n = serializers.DictField(
        child=serializers.ListField(child=serializers.CharField()), help_text=("The quick phrases per language.")
    )
    provider = serializers.ChoiceField(
        choices=PROVIDERS,
        allow_null=True,
        help_text=("The assistant's provider (not the credential's driver code); null when unset."),
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
        source="assistant", help_text=("The assistant the operator answers with; required on create.")
    )
    name = LabelField(
        max_length=150, required=False, allow_blank=False, help_text=("The name replies are attributed to.")
    )
    show_in_header = StrictBooleanField(required=False, help_text="True to show the operator in the widget header.")
    status = serializers.ChoiceField(
        choices=["active", "paused", "retired"], required=False, help_text=("`active`, `paused` or `retired`.")
    )


class OperatorDoc(serializers.Serializer):
    id = serializers.IntegerField(help_text="The AI operator's agent id.")
    type = serializers.ChoiceField(choices=["ai"], help_text="`ai`.")
    assistant_id = serializers.IntegerField(
        allow_null=True, help_text=("The assistant the operator answers with; null when none.")
    )
    name = serializers.CharField(help_text="The name replies are attributed to.")
    show_in_header = serializers.BooleanField(help_text="True when the widget header shows the operator.")
    status = serializers.ChoiceField(
        choices=["active", "paused", "retired"],
        help_text=("`active`, `paused` or `retired` (DELETE retires; `active` brings it back)."),
    )
    created_at = serializers.DateTimeField(help_text="When the operator was created.")


# --- credentials ------------------------------------------------------------------------------------------


class SecretField(StrictCharField):
    def __init__(self, **kwargs):
        kwargs.setdefault("max_length", 4096)
        super().__init__(write_only=True, trim_whitespace=False, **kwargs)

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        if any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in value) or value != value.strip():
            raise serializers.ValidationError("Must not contain whitespace at the ends or control characters.")
        return value


class AiOperatorField(TenantPrimaryKeyField):
    def __init__(self, **kwargs):
        super().__init__(queryset=Agent.objects.filter(type=Agent.Type.AI), missing="422", **kwargs)


class BackupField(TenantPrimaryKeyField):
    def __init__(self, **kwargs):
        super().__init__(queryset=Credential.objects.all(), missing="422", **kwargs)


class CredentialInput(InputSerializer):
    provider = serializers.ChoiceField(
        choices=PROVIDERS,
        help_text=(
            "The driver code: `openai_compatible` (needs `base_url`) or a vendor driver; immutable after creation."
        ),
    )
    api_key = SecretField(help_text="The provider's API key; write-only, never returned.")
    base_url = StrictCharField(
        max_length=2000,
        required=False,
        allow_null=True,
        allow_blank=True,
        help_text=("The provider's base URL; required for `openai_compatible`."),
    )
    model = StrictCharField(
        max_length=200, required=False, allow_null=True, allow_blank=True, help_text=("The model name.")
    )
    embedding_model = StrictCharField(
        max_length=100,
        required=False,
        allow_null=True,
        allow_blank=True,
        help_text="The model knowledge-base embeddings use (null: the vendor's default embedding model for "
        "openai and gigachat, `model` for openai_compatible).",
    )
    signing_secret = SecretField(
        required=False,
        allow_null=True,
        help_text=("A signing secret for the provider's calls; write-only, never returned."),
    )
    is_active = StrictBooleanField(required=False, help_text="False to keep the credential without using it.")
    assistant_id = AssistantField(
        source="assistant",
        required=False,
        allow_null=True,
        help_text=("Scope the credential to this assistant; not with `operator_id`."),
    )
    operator_id = AiOperatorField(
        source="operator",
        required=False,
        allow_null=True,
        help_text=("Scope the credential to this AI operator; not with `assistant_id`."),
    )
    backup_credential_id = BackupField(
        source="backup_credential",
        required=False,
        allow_null=True,
        help_text=("The credential to try when this one fails; never itself."),
    )

    def validate(self, attrs):
        if attrs.get("assistant") is not None and attrs.get("operator") is not None:
            raise serializers.ValidationError({"operator_id": ["Give assistant_id or operator_id, not both."]})
        instance = self.context.get("credential")
        if instance is not None and attrs.get("backup_credential") is not None:
            if attrs["backup_credential"].pk == instance.pk:
                raise serializers.ValidationError({"backup_credential_id": ["A credential cannot back itself up."]})
        return attrs


class CredentialPatchInput(CredentialInput):
    """Everything but `provider` (immutable: refused by name)."""

    provider = serializers.ChoiceField(choices=PROVIDERS, read_only=True)


class BackupLinkDoc(serializers.Serializer):
    id = serializers.IntegerField(help_text="The credential's id.")
    provider = serializers.ChoiceField(choices=PROVIDERS, help_text="The credential's driver code.")
    model = serializers.CharField(allow_null=True, help_text="The credential's model; null when unset.")
    is_active = serializers.BooleanField(help_text="True when the credential is in use.")


class CredentialDoc(serializers.Serializer):
    id = serializers.IntegerField(help_text="The credential's id.")
    provider = serializers.ChoiceField(
        choices=PROVIDERS, help_text=("The driver code: `openai_compatible` or a vendor driver; immutable.")
    )
    base_url = serializers.CharField(allow_null=True, help_text="The provider's base URL; null when unset.")
    endpoint = serializers.CharField(
        allow_null=True, help_text="Where calls go: `base_url`, else the vendor's address (null: not callable)."
    )
    model = serializers.CharField(allow_null=True, help_text="The model name; null when unset.")
    embedding_model = serializers.CharField(
        allow_null=True,
        help_text="The model knowledge-base embeddings use (null: the vendor's default embedding model for "
        "openai and gigachat, `model` for openai_compatible).",
    )
    is_active = serializers.BooleanField(help_text="True when the credential is in use.")
    scope = serializers.ChoiceField(
        choices=["widget", "assistant", "operator"],
        help_text=("`widget`, `assistant` or `operator`: what the credential serves."),
    )
    assistant_id = serializers.IntegerField(
        allow_null=True, help_text=("The assistant it serves; null unless `scope` is `assistant`.")
    )
    operator_id = serializers.IntegerField(
        allow_null=True, help_text=("The AI operator it serves; null unless `scope` is `operator`.")
    )
    backup_credential_id = serializers.IntegerField(
        allow_null=True, help_text=("The credential tried when this one fails; null when none.")
    )
    backup_chain = BackupLinkDoc(many=True, help_text="The resolved chain of backups, in the order they are tried.")
    has_api_key = serializers.BooleanField(help_text="True when an API key is stored (it is never returned).")
    has_signing_secret = serializers.BooleanField(
        help_text=("True when a signing secret is stored (it is never returned).")
    )
    created_at = serializers.DateTimeField(help_text="When the credential was created.")
    updated_at = serializers.DateTimeField(help_text="When the credential was last changed.")


class ModelDoc(serializers.Serializer):
    id = serializers.CharField(help_text="The model's id, as `model` takes it.")
    label = serializers.CharField(help_text="The model's name, for people.")
    is_recommended = serializers.BooleanField(help_text="True for the credential's configured `model`.")


class ModelListDoc(serializers.Serializer):
    data = ModelDoc(many=True, help_text="The models the provider offers.")


class EmptyQuery(InputSerializer):
    """No parameters."""


# --- alerts and demand signals ----------------------------------------------------------------------------


class AlertQuery(InputSerializer):
    state = serializers.ChoiceField(choices=["unacknowledged", "acknowledged", "all"], required=False)


class AcknowledgeInput(InputSerializer):
    ids = serializers.ListField(
        child=StrictIntegerField(min_value=1),
        max_length=100,
        required=False,
        help_text=("The alerts to acknowledge, at most 100."),
    )


class AlertDoc(serializers.Serializer):
    id = serializers.IntegerField(help_text="The alert's id.")
    kind = serializers.CharField(help_text="What the alert is about.")
    message = serializers.CharField(help_text="The alert, for people.")
    details = serializers.DictField(help_text="Details of the alert, by name.")
    state = serializers.ChoiceField(
        choices=["unacknowledged", "acknowledged"], help_text=("`unacknowledged` or `acknowledged`.")
    )
    created_at = serializers.DateTimeField(help_text="When the alert was raised.")
    acknowledged_at = serializers.DateTimeField(
        allow_null=True, help_text=("When the alert was acknowledged; null until then.")
    )


class AcknowledgedDoc(serializers.Serializer):
    acknowledged = serializers.IntegerField(help_text="How many alerts this call acknowledged.")
    ids = serializers.ListField(child=serializers.IntegerField(), help_text="The acknowledged alerts' ids.")


class DemandQuery(InputSerializer):
    """`from`, `to` (dates or date-times, Europe/Moscow unless an offset is given), `category`, `limit`."""

    def get_fields(self):
        return {
            "from": MomentField(required=False, help_text="Only signals that occurred at or after this moment."),
            "to": MomentField(required=False, help_text="Only signals that occurred before this moment."),
            "category": serializers.ChoiceField(choices=DEMAND_CATEGORIES, required=False),
        }


class DemandSignalDoc(serializers.Serializer):
    id = serializers.IntegerField(help_text="The signal's id.")
    category = serializers.ChoiceField(choices=DEMAND_CATEGORIES, help_text="The signal's category.")
    topic = serializers.CharField(help_text="What visitors asked for.")
    count = serializers.IntegerField(help_text="How many times it occurred.")
    sample = serializers.CharField(help_text="A sample of the visitors' wording.")
    occurred_at = serializers.DateTimeField(help_text="When it occurred.")


class DemandListDoc(serializers.Serializer):
    data = DemandSignalDoc(many=True, help_text="The signals, newest first.")


# --- marketplace ------------------------------------------------------------------------------------------


class TemplateListQuery(InputSerializer):
    category = serializers.ChoiceField(choices=marketplace.CATEGORIES, required=False)
    locale = serializers.ChoiceField(choices=marketplace.LOCALES, required=False)
    page = serializers.RegexField(r"^[1-9][0-9]{0,5}$", required=False, help_text="Page number, from 1 (default 1).")
    limit = serializers.RegexField(
        r"^[1-9][0-9]{0,2}$", required=False, help_text="Page size, 1 to 100 (default 20); else 422."
    )


class TemplateQuery(InputSerializer):
    locale = serializers.ChoiceField(choices=marketplace.LOCALES, required=False)


class TemplateSummaryDoc(serializers.Serializer):
    slug = serializers.CharField(help_text="The template's slug: what the template routes take.")
    category = serializers.ChoiceField(choices=marketplace.CATEGORIES, help_text="The template's category.")
    locale = serializers.ChoiceField(choices=marketplace.LOCALES, help_text="The template's language: `ru` or `en`.")
    name = serializers.CharField(help_text="The template's name.")
    description = serializers.CharField(help_text="What the template is for.")


class TemplatePageDoc(serializers.Serializer):
    data = TemplateSummaryDoc(many=True, help_text="The page's templates.")
    page = serializers.IntegerField(help_text="The page number, from 1.")
    limit = serializers.IntegerField(help_text="The page size.")
    has_more = serializers.BooleanField(help_text="True when a next page exists.")


class TemplateDoc(TemplateSummaryDoc):
    persona = serializers.CharField(help_text="The persona an applied assistant starts with.")
    system_prompt = serializers.CharField(help_text="The system prompt an applied assistant starts with.")
    greeting = serializers.CharField(help_text="The greeting an applied assistant starts with.")
    quick_phrases = serializers.ListField(
        child=serializers.CharField(), help_text=("The quick phrases an applied assistant starts with.")
    )
    temperature = serializers.FloatField(help_text="The sampling temperature an applied assistant starts with.")
    escalation_triggers = serializers.ListField(
        child=serializers.CharField(), help_text=("The template's own escalation triggers.")
    )
    effective_escalation_triggers = serializers.ListField(
        child=serializers.CharField(),
        help_text=(
            "Its triggers plus the service's base triggers of the locale: what an applied assistant starts with."
        ),
    )


# --- the integration binding ------------------------------------------------------------------------------


class IntegrationInput(InputSerializer):
    provider = serializers.ChoiceField(
        choices=PROVIDERS,
        help_text=(
            "The provider driver; an active unowned credential for it must exist (else 409 `credential_unavailable`)."
        ),
    )
    assistant_id = AssistantField(
        source="assistant",
        required=False,
        allow_null=True,
        help_text=("The assistant whose credential the binding uses; optional."),
    )


class IntegrationDoc(serializers.Serializer):
    provider = serializers.ChoiceField(choices=PROVIDERS, help_text="The provider driver.")
    api_token_id = serializers.IntegerField(
        help_text=("The token that signs the turn endpoint's calls (the one that created the binding).")
    )
    assistant_id = serializers.IntegerField(allow_null=True, help_text="The bound assistant; null when none.")
    turn_endpoint = serializers.URLField(help_text="The absolute URL of `/api/v1/ai/assistant/turn`.")
    has_secret = serializers.BooleanField(help_text="True while a signing secret is stored.")
    created_at = serializers.DateTimeField(help_text="When the binding was created.")


class IntegrationEnvelope(serializers.Serializer):
    data = IntegrationDoc(allow_null=True, help_text="The binding; null when none exists.")


class IntegrationCreatedDoc(IntegrationDoc):
    signing_secret = serializers.CharField(
        min_length=48, max_length=48, help_text=("The 48-character signing secret, returned once.")
    )


class IntegrationCreatedEnvelope(serializers.Serializer):
    data = IntegrationCreatedDoc(help_text="The new binding and its secret.")


def alert_payload(alert: Alert) -> dict:
    return {
        "id": alert.pk,
        "kind": alert.kind,
        "message": alert.message,
        "details": alert.details,
        "state": alert.state,
        "created_at": alert.created_at.isoformat(),
        "acknowledged_at": alert.acknowledged_at.isoformat() if alert.acknowledged_at else None,
    }


def demand_payload(signal: DemandSignal) -> dict:
    return {
        "id": signal.pk,
        "category": signal.category,
        "topic": signal.topic,
        "count": signal.count,
        "sample": signal.sample,
        "occurred_at": signal.occurred_at.isoformat(),
    }


# --- widget translations ----------------------------------------------------------------------------------


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
        help_text=("False when the translation store is missing (`reason` `schema_unavailable`, zero counts).")
    )
    enabled = serializers.BooleanField(help_text="True while auto-translation of custom texts is on.")
    reason = serializers.ChoiceField(
        choices=["schema_unavailable", "credential_missing"],
        allow_null=True,
        help_text=("`schema_unavailable`, `credential_missing` (no active widget-wide provider credential), or null."),
    )
    revision = serializers.IntegerField(help_text="The widget's language policy revision.")
    total = serializers.IntegerField(help_text="How many translations there are.")
    counts = TranslationCountsDoc(help_text="Translations per state.")


class TranslationItemDoc(serializers.Serializer):
    locale = serializers.ChoiceField(choices=LOCALE_CHOICES, help_text="The translation's language.")
    field = serializers.ChoiceField(
        choices=("widget_name", "widget_signature", "widget_greeting"),
        help_text=("`widget_name`, `widget_signature` or `widget_greeting`."),
    )
    state = serializers.ChoiceField(
        choices=["ready", "stale", "pending", "failed"], help_text=("`ready`, `stale`, `pending` or `failed`.")
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
        choices=("widget_name", "widget_signature", "widget_greeting"), help_text=("The job's field.")
    )


class RegenerateDoc(serializers.Serializer):
    accepted = serializers.IntegerField(help_text="How many jobs were accepted.")
    jobs = RegenerateJobDoc(many=True, help_text="The accepted jobs.")


class RegenerateEnvelope(serializers.Serializer):
    data = RegenerateDoc(help_text="The accepted regeneration.")
