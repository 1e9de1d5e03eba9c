"""factory-boy factories of the core; children inherit the tenant of their parent."""

import factory
from django.contrib.auth import get_user_model

from apps.agents.models import Agent
from apps.core.models import Account, Widget


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)

    username = factory.Sequence(lambda n: f"user{n}@example.com")
    email = factory.LazyAttribute(lambda o: o.username)


class AccountFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Account

    user = factory.SubFactory(UserFactory)
    name = factory.Faker("first_name")


class WidgetFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Widget

    account = factory.SubFactory(AccountFactory)
    name = factory.Sequence(lambda n: f"Widget {n}")
    api_enabled = True


class AgentFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Agent

    widget = factory.SubFactory(WidgetFactory)
    name = factory.Faker("first_name")
    email = factory.Sequence(lambda n: f"agent{n}@example.com")
    type = Agent.Type.HUMAN
