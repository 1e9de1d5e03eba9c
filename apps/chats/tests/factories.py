"""Factories of conversations; children inherit the tenant of their parent."""

import factory
from django.utils import timezone

from apps.chats.models import Chat, Contact, Message
from tests.support.factories import AgentFactory, WidgetFactory


class ContactFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Contact

    widget = factory.SubFactory(WidgetFactory)
    name = factory.Faker("name")
    email = factory.Sequence(lambda n: f"visitor{n}@example.com")


class ChatFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Chat

    contact = factory.SubFactory(ContactFactory)
    widget = factory.SelfAttribute("contact.widget")
    channel = "widget"


class MessageFactory(factory.django.DjangoModelFactory):
    """A stored message; keeps the chat's last-message facts like the services do."""

    class Meta:
        model = Message
        skip_postgeneration_save = True

    chat = factory.SubFactory(ChatFactory)
    widget = factory.SelfAttribute("chat.widget")
    type = Message.Type.TEXT
    body = factory.Sequence(lambda n: f"message {n}")
    author_kind = Message.Author.CLIENT
    created_at = factory.LazyFunction(timezone.now)

    @factory.post_generation
    def keep_chat_facts(obj, create, extracted, **kwargs):
        if not create:
            return
        chat = obj.chat
        chat.last_message, chat.last_message_at = obj, obj.created_at
        if obj.author_kind == Message.Author.CLIENT:
            chat.has_client_messages = True
        chat.save(update_fields=["last_message", "last_message_at", "has_client_messages"])


__all__ = ["AgentFactory", "ChatFactory", "ContactFactory", "MessageFactory", "WidgetFactory"]
