"""Factories of mentions; children inherit the tenant of their parent."""

import factory
from django.utils import timezone

from apps.agents.tests.factories import HumanAgentFactory
from apps.chats.models import Message
from apps.chats.tests.factories import MessageFactory
from apps.mentions.models import Mention


class NoteFactory(MessageFactory):
    visibility = Message.Visibility.NOTE
    author_kind = Message.Author.AGENT
    agent = factory.SubFactory(HumanAgentFactory, widget=factory.SelfAttribute("..widget"))


class MentionFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Mention

    message = factory.SubFactory(NoteFactory)
    widget = factory.SelfAttribute("message.widget")
    chat = factory.SelfAttribute("message.chat")
    agent = factory.SubFactory(HumanAgentFactory, widget=factory.SelfAttribute("..widget"))
    by_agent = factory.SelfAttribute("message.agent")
    created_at = factory.LazyFunction(timezone.now)
