"""Factories of agents, departments, invitations and agent events; children inherit the tenant of
their parent."""

from datetime import timedelta

import factory
from django.utils import timezone

from apps.agents.events_log import code_of
from apps.agents.models import Agent, AgentEvent, Department, Invitation
from apps.agents.services import hash_token
from tests.support.factories import AgentFactory, UserFactory, WidgetFactory


class HumanAgentFactory(AgentFactory):
    """A human operator with a Django user, as an accepted invitation makes."""

    user = factory.SubFactory(UserFactory, username=factory.SelfAttribute("..email"))


class AIAgentFactory(AgentFactory):
    type = Agent.Type.AI
    ai_assistant_id = factory.Sequence(lambda n: 1000 + n)


class DepartmentFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Department

    widget = factory.SubFactory(WidgetFactory)
    name = factory.Sequence(lambda n: f"Department {n}")
    channels = factory.LazyFunction(lambda: ["smb"])
    schedule = factory.LazyFunction(
        lambda: {day: "full" for day in ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")}
    )


class InvitationFactory(factory.django.DjangoModelFactory):
    """`token` is the plaintext of the link (not stored)."""

    class Meta:
        model = Invitation
        exclude = ("token",)

    widget = factory.SubFactory(WidgetFactory)
    email = factory.Sequence(lambda n: f"invitee{n}@example.com")
    token = factory.Sequence(lambda n: f"token-{n:040d}")
    token_hash = factory.LazyAttribute(lambda o: hash_token(o.token))
    expires_at = factory.LazyFunction(lambda: timezone.now() + timedelta(days=7))


class AgentEventFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = AgentEvent

    agent = factory.SubFactory(AgentFactory)
    widget = factory.SelfAttribute("agent.widget")
    type_code = code_of("suspended")


__all__ = [
    "AIAgentFactory",
    "AgentEventFactory",
    "AgentFactory",
    "DepartmentFactory",
    "HumanAgentFactory",
    "InvitationFactory",
    "WidgetFactory",
]
