"""Provider credentials and the models a credential's provider offers."""

from __future__ import annotations

from rest_framework import serializers

from apps.agents.models import Agent
from apps.core.api.serializers import (
    InputSerializer,
    StrictBooleanField,
    StrictCharField,
    TenantPrimaryKeyField,
)

from ...models import PROVIDERS, Credential
from .assistants import AssistantField


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
        help_text="The provider's base URL; required for `openai_compatible`.",
    )
    model = StrictCharField(
        max_length=200, required=False, allow_null=True, allow_blank=True, help_text="The model name."
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
        help_text="A signing secret for the provider's calls; write-only, never returned.",
    )
    is_active = StrictBooleanField(required=False, help_text="False to keep the credential without using it.")
    assistant_id = AssistantField(
        source="assistant",
        required=False,
        allow_null=True,
        help_text="Scope the credential to this assistant; not with `operator_id`.",
    )
    operator_id = AiOperatorField(
        source="operator",
        required=False,
        allow_null=True,
        help_text="Scope the credential to this AI operator; not with `assistant_id`.",
    )
    backup_credential_id = BackupField(
        source="backup_credential",
        required=False,
        allow_null=True,
        help_text="The credential to try when this one fails; never itself.",
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
    """Everything but `provider` (immutable: refused by name). A new `base_url` takes `api_key` in the
    same PATCH (422 at `api_key` otherwise): the stored key is never sent to another address."""

    provider = serializers.ChoiceField(choices=PROVIDERS, read_only=True)


class BackupLinkDoc(serializers.Serializer):
    id = serializers.IntegerField(help_text="The credential's id.")
    provider = serializers.ChoiceField(choices=PROVIDERS, help_text="The credential's driver code.")
    model = serializers.CharField(allow_null=True, help_text="The credential's model; null when unset.")
    is_active = serializers.BooleanField(help_text="True when the credential is in use.")


class CredentialDoc(serializers.Serializer):
    id = serializers.IntegerField(help_text="The credential's id.")
    provider = serializers.ChoiceField(
        choices=PROVIDERS, help_text="The driver code: `openai_compatible` or a vendor driver; immutable."
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
        help_text="`widget`, `assistant` or `operator`: what the credential serves.",
    )
    assistant_id = serializers.IntegerField(
        allow_null=True, help_text="The assistant it serves; null unless `scope` is `assistant`."
    )
    operator_id = serializers.IntegerField(
        allow_null=True, help_text="The AI operator it serves; null unless `scope` is `operator`."
    )
    backup_credential_id = serializers.IntegerField(
        allow_null=True, help_text="The credential tried when this one fails; null when none."
    )
    backup_chain = BackupLinkDoc(many=True, help_text="The resolved chain of backups, in the order they are tried.")
    has_api_key = serializers.BooleanField(help_text="True when an API key is stored (it is never returned).")
    has_signing_secret = serializers.BooleanField(
        help_text="True when a signing secret is stored (it is never returned)."
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
