"""The integration binding: its input and documented shapes."""

from __future__ import annotations

from rest_framework import serializers

from apps.core.api.serializers import InputSerializer

from ...models import PROVIDERS
from .assistants import AssistantField


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
        help_text="The assistant whose credential the binding uses; optional.",
    )


class IntegrationDoc(serializers.Serializer):
    provider = serializers.ChoiceField(choices=PROVIDERS, help_text="The provider driver.")
    api_token_id = serializers.IntegerField(
        help_text="The token that signs the turn endpoint's calls (the one that created the binding)."
    )
    assistant_id = serializers.IntegerField(allow_null=True, help_text="The bound assistant; null when none.")
    turn_endpoint = serializers.URLField(help_text="The absolute URL of `/api/v1/ai/assistant/turn`.")
    has_secret = serializers.BooleanField(help_text="True while a signing secret is stored.")
    created_at = serializers.DateTimeField(help_text="When the binding was created.")


class IntegrationEnvelope(serializers.Serializer):
    data = IntegrationDoc(allow_null=True, help_text="The binding; null when none exists.")


class IntegrationCreatedDoc(IntegrationDoc):
    signing_secret = serializers.CharField(
        min_length=48, max_length=48, help_text="The 48-character signing secret, returned once."
    )


class IntegrationCreatedEnvelope(serializers.Serializer):
    data = IntegrationCreatedDoc(help_text="The new binding and its secret.")
