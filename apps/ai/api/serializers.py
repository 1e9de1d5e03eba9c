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
    enabled = StrictBooleanField(required=False)
    rag_enabled = StrictBooleanField(required=False)
    shadow_mode = StrictBooleanField(required=False)
    autonomous_tuning_enabled = StrictBooleanField(required=False)
    presence_context_enabled = StrictBooleanField(required=False)
    takeover_timeout_sec = StrictIntegerField(required=False, min_value=30, max_value=86400)
    handover_summary = StrictBooleanField(required=False)


class SettingsQuery(InputSerializer):
    assistant_id = IdQueryField(required=False, help_text="The assistant `learning_target` follows.")


class EffectiveAssistantDoc(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()


class LearningTargetDoc(serializers.Serializer):
    assistant_id = serializers.IntegerField()
    name = serializers.CharField()


class SettingsDoc(serializers.Serializer):
    enabled = serializers.BooleanField()
    rag_enabled = serializers.BooleanField()
    shadow_mode = serializers.BooleanField()
    autonomous_tuning_enabled = serializers.BooleanField()
    presence_context_enabled = serializers.BooleanField()
    takeover_timeout_sec = serializers.IntegerField()
    handover_summary = serializers.BooleanField()
    offline_outcome_mode = serializers.ChoiceField(choices=["handover_offline", "handover_unknown"])
    effective_assistant = EffectiveAssistantDoc(allow_null=True)
    legacy_persona = serializers.CharField(allow_null=True)
    learning_target = LearningTargetDoc(allow_null=True)


class PhraseLanguagesInput(InputSerializer):
    """One phrase: language -> text (null resets that language)."""

    def get_fields(self):
        return {
            lang: StrictCharField(required=False, allow_null=True, allow_blank=True, trim_whitespace=False)
            for lang in phrases.LANGUAGES
        }


class PhrasesInput(InputSerializer):
    """The seven phrase keys, each an object of languages (or null: every language of it)."""

    def get_fields(self):
        return {key: PhraseLanguagesInput(required=False, allow_null=True) for key in phrases.KEYS}


class PhraseDoc(serializers.Serializer):
    text = serializers.CharField()
    source = serializers.ChoiceField(choices=["override", "default"])
    default = serializers.CharField()


class PhraseLanguagesDoc(serializers.Serializer):
    def get_fields(self):
        return {lang: PhraseDoc() for lang in phrases.LANGUAGES}


class PhrasesDoc(serializers.Serializer):
    def get_fields(self):
        return {key: PhraseLanguagesDoc() for key in phrases.KEYS}


# --- assistants -------------------------------------------------------------------------------------------


class AssistantInput(InputSerializer):
    name = LabelField(max_length=200, allow_blank=False)
    enabled = StrictBooleanField(required=False)
    is_default = StrictBooleanField(required=False)
    persona = TextField(max_length=4000, required=False)
    system_prompt = TextField(max_length=20000, required=False)
    temperature = StrictFloatField(required=False, allow_null=True, min_value=0, max_value=2)
    rag_enabled = StrictBooleanField(required=False)
    cite_sources = StrictBooleanField(required=False)
    escalation_triggers = serializers.ListField(child=LabelField(max_length=200), max_length=50, required=False)
    greeting = TextField(max_length=1000, required=False)
    quick_phrases = PhraseListField(required=False)
    greeting_i18n = LocaleMapField(child=TextField(max_length=1000), required=False)
    quick_phrases_i18n = LocaleMapField(child=PhraseListField(), required=False)
    provider = serializers.ChoiceField(choices=PROVIDERS, required=False, allow_null=True)
    model = StrictCharField(max_length=200, required=False, allow_null=True, allow_blank=True)

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
    id = serializers.IntegerField()
    name = serializers.CharField()
    enabled = serializers.BooleanField()
    is_default = serializers.BooleanField()
    persona = serializers.CharField()
    system_prompt = serializers.CharField()
    temperature = serializers.FloatField(allow_null=True)
    rag_enabled = serializers.BooleanField()
    cite_sources = serializers.BooleanField(
        help_text="An answer built on knowledge-base chunks carries `sources`: the documents they came from."
    )
    escalation_triggers = serializers.ListField(child=serializers.CharField())
    greeting = serializers.CharField()
    quick_phrases = serializers.ListField(child=serializers.CharField())
    greeting_i18n = serializers.DictField(child=serializers.CharField())
    quick_phrases_i18n = serializers.DictField(child=serializers.ListField(child=serializers.CharField()))
    provider = serializers.ChoiceField(choices=PROVIDERS, allow_null=True)
    model = serializers.CharField(allow_null=True)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class AssistantCreatedDoc(serializers.Serializer):
    assistant = AssistantDoc()
    created = serializers.BooleanField()


class OperatorRefDoc(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()


# --- operators --------------------------------------------------------------------------------------------


class AssistantField(TenantPrimaryKeyField):
    def __init__(self, **kwargs):
        super().__init__(queryset=Assistant.objects.all(), missing="422", **kwargs)


class OperatorInput(InputSerializer):
    assistant_id = AssistantField(source="assistant")
    name = LabelField(max_length=150, required=False, allow_blank=False)
    show_in_header = StrictBooleanField(required=False)
    status = serializers.ChoiceField(choices=["active", "paused", "retired"], required=False)


class OperatorDoc(serializers.Serializer):
    id = serializers.IntegerField()
    type = serializers.ChoiceField(choices=["ai"])
    assistant_id = serializers.IntegerField(allow_null=True)
    name = serializers.CharField()
    show_in_header = serializers.BooleanField()
    status = serializers.ChoiceField(choices=["active", "paused", "retired"])
    created_at = serializers.DateTimeField()


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
    provider = serializers.ChoiceField(choices=PROVIDERS)
    api_key = SecretField()
    base_url = StrictCharField(max_length=2000, required=False, allow_null=True, allow_blank=True)
    model = StrictCharField(max_length=200, required=False, allow_null=True, allow_blank=True)
    embedding_model = StrictCharField(
        max_length=100,
        required=False,
        allow_null=True,
        allow_blank=True,
        help_text="The model knowledge-base embeddings use (null: the vendor's default embedding model for "
        "openai and gigachat, `model` for openai_compatible).",
    )
    signing_secret = SecretField(required=False, allow_null=True)
    is_active = StrictBooleanField(required=False)
    assistant_id = AssistantField(source="assistant", required=False, allow_null=True)
    operator_id = AiOperatorField(source="operator", required=False, allow_null=True)
    backup_credential_id = BackupField(source="backup_credential", required=False, allow_null=True)

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
    id = serializers.IntegerField()
    provider = serializers.ChoiceField(choices=PROVIDERS)
    model = serializers.CharField(allow_null=True)
    is_active = serializers.BooleanField()


class CredentialDoc(serializers.Serializer):
    id = serializers.IntegerField()
    provider = serializers.ChoiceField(choices=PROVIDERS)
    base_url = serializers.CharField(allow_null=True)
    endpoint = serializers.CharField(
        allow_null=True, help_text="Where calls go: `base_url`, else the vendor's address (null: not callable)."
    )
    model = serializers.CharField(allow_null=True)
    embedding_model = serializers.CharField(
        allow_null=True,
        help_text="The model knowledge-base embeddings use (null: the vendor's default embedding model for "
        "openai and gigachat, `model` for openai_compatible).",
    )
    is_active = serializers.BooleanField()
    scope = serializers.ChoiceField(choices=["widget", "assistant", "operator"])
    assistant_id = serializers.IntegerField(allow_null=True)
    operator_id = serializers.IntegerField(allow_null=True)
    backup_credential_id = serializers.IntegerField(allow_null=True)
    backup_chain = BackupLinkDoc(many=True)
    has_api_key = serializers.BooleanField()
    has_signing_secret = serializers.BooleanField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class ModelDoc(serializers.Serializer):
    id = serializers.CharField()
    label = serializers.CharField()
    is_recommended = serializers.BooleanField()


class ModelListDoc(serializers.Serializer):
    data = ModelDoc(many=True)


class EmptyQuery(InputSerializer):
    """No parameters."""


# --- alerts and demand signals ----------------------------------------------------------------------------


class AlertQuery(InputSerializer):
    state = serializers.ChoiceField(choices=["unacknowledged", "acknowledged", "all"], required=False)


class AcknowledgeInput(InputSerializer):
    ids = serializers.ListField(child=StrictIntegerField(min_value=1), max_length=100, required=False)


class AlertDoc(serializers.Serializer):
    id = serializers.IntegerField()
    kind = serializers.CharField()
    message = serializers.CharField()
    details = serializers.DictField()
    state = serializers.ChoiceField(choices=["unacknowledged", "acknowledged"])
    created_at = serializers.DateTimeField()
    acknowledged_at = serializers.DateTimeField(allow_null=True)


class AcknowledgedDoc(serializers.Serializer):
    acknowledged = serializers.IntegerField()
    ids = serializers.ListField(child=serializers.IntegerField())


class DemandQuery(InputSerializer):
    """`from`, `to` (dates or date-times, Europe/Moscow unless an offset is given), `category`, `limit`."""

    def get_fields(self):
        return {
            "from": MomentField(required=False, help_text="Only signals that occurred at or after this moment."),
            "to": MomentField(required=False, help_text="Only signals that occurred before this moment."),
            "category": serializers.ChoiceField(choices=DEMAND_CATEGORIES, required=False),
        }


class DemandSignalDoc(serializers.Serializer):
    id = serializers.IntegerField()
    category = serializers.ChoiceField(choices=DEMAND_CATEGORIES)
    topic = serializers.CharField()
    count = serializers.IntegerField()
    sample = serializers.CharField()
    occurred_at = serializers.DateTimeField()


class DemandListDoc(serializers.Serializer):
    data = DemandSignalDoc(many=True)


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
    slug = serializers.CharField()
    category = serializers.ChoiceField(choices=marketplace.CATEGORIES)
    locale = serializers.ChoiceField(choices=marketplace.LOCALES)
    name = serializers.CharField()
    description = serializers.CharField()


class TemplatePageDoc(serializers.Serializer):
    data = TemplateSummaryDoc(many=True)
    page = serializers.IntegerField()
    limit = serializers.IntegerField()
    has_more = serializers.BooleanField()


class TemplateDoc(TemplateSummaryDoc):
    persona = serializers.CharField()
    system_prompt = serializers.CharField()
    greeting = serializers.CharField()
    quick_phrases = serializers.ListField(child=serializers.CharField())
    temperature = serializers.FloatField()
    escalation_triggers = serializers.ListField(child=serializers.CharField())
    effective_escalation_triggers = serializers.ListField(child=serializers.CharField())


# --- the integration binding ------------------------------------------------------------------------------


class IntegrationInput(InputSerializer):
    provider = serializers.ChoiceField(choices=PROVIDERS)
    assistant_id = AssistantField(source="assistant", required=False, allow_null=True)


class IntegrationDoc(serializers.Serializer):
    provider = serializers.ChoiceField(choices=PROVIDERS)
    api_token_id = serializers.IntegerField()
    assistant_id = serializers.IntegerField(allow_null=True)
    turn_endpoint = serializers.URLField()
    has_secret = serializers.BooleanField()
    created_at = serializers.DateTimeField()


class IntegrationEnvelope(serializers.Serializer):
    data = IntegrationDoc(allow_null=True)


class IntegrationCreatedDoc(IntegrationDoc):
    signing_secret = serializers.CharField(min_length=48, max_length=48)


class IntegrationCreatedEnvelope(serializers.Serializer):
    data = IntegrationCreatedDoc()


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
            ),
            "locales": serializers.ListField(
                child=serializers.ChoiceField(choices=LOCALE_CHOICES), min_length=1, max_length=7
            ),
        }

    def validate(self, attrs):
        for name in ("fields", "locales"):
            if len(set(attrs[name])) != len(attrs[name]):
                raise serializers.ValidationError({name: ["Give each value once."]})
        return attrs


class TranslationCountsDoc(serializers.Serializer):
    ready = serializers.IntegerField()
    stale = serializers.IntegerField()
    pending = serializers.IntegerField()
    failed = serializers.IntegerField()


class TranslationStatusDoc(serializers.Serializer):
    available = serializers.BooleanField()
    enabled = serializers.BooleanField()
    reason = serializers.ChoiceField(choices=["schema_unavailable", "credential_missing"], allow_null=True)
    revision = serializers.IntegerField()
    total = serializers.IntegerField()
    counts = TranslationCountsDoc()


class TranslationItemDoc(serializers.Serializer):
    locale = serializers.ChoiceField(choices=LOCALE_CHOICES)
    field = serializers.ChoiceField(choices=("widget_name", "widget_signature", "widget_greeting"))
    state = serializers.ChoiceField(choices=["ready", "stale", "pending", "failed"])
    has_text = serializers.BooleanField()
    source_hash = serializers.CharField()
    error = serializers.CharField(allow_null=True)
    updated_at = serializers.DateTimeField(allow_null=True)


class TranslationsDoc(serializers.Serializer):
    status = TranslationStatusDoc()
    revision = serializers.IntegerField()
    items = TranslationItemDoc(many=True)


class TranslationsEnvelope(serializers.Serializer):
    data = TranslationsDoc()


class RegenerateJobDoc(serializers.Serializer):
    locale = serializers.ChoiceField(choices=LOCALE_CHOICES)
    field = serializers.ChoiceField(choices=("widget_name", "widget_signature", "widget_greeting"))


class RegenerateDoc(serializers.Serializer):
    accepted = serializers.IntegerField()
    jobs = RegenerateJobDoc(many=True)


class RegenerateEnvelope(serializers.Serializer):
    data = RegenerateDoc()
