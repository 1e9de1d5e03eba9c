"""Factories of the AI app; children inherit the tenant of their parent."""

import factory

from apps.agents.models import Agent
from apps.ai.models import Alert, Assistant, Credential, DemandSignal
from apps.core.crypto import encrypt_secret
from tests.support.factories import AgentFactory, WidgetFactory


class AssistantFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Assistant

    widget = factory.SubFactory(WidgetFactory)
    name = factory.Sequence(lambda n: f"Assistant {n}")


class AiOperatorFactory(AgentFactory):
    """An AI operator: an `ai` agent bound to `assistant` (same widget)."""

    class Params:
        assistant = factory.SubFactory(AssistantFactory)

    widget = factory.SelfAttribute("assistant.widget")
    type = Agent.Type.AI
    ai_assistant_id = factory.SelfAttribute("assistant.pk")


class CredentialFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Credential

    class Params:
        api_key = "sk-test-key"

    widget = factory.SubFactory(WidgetFactory)
    provider = "openai"
    api_key_encrypted = factory.LazyAttribute(lambda o: encrypt_secret(o.api_key))


class AlertFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Alert

    widget = factory.SubFactory(WidgetFactory)
    kind = "provider_failing"
    message = "The provider answered 500 three times."


class DemandSignalFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = DemandSignal

    widget = factory.SubFactory(WidgetFactory)
    category = "unanswered"
    topic = "gift cards"
