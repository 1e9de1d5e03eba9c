"""Fixtures of the console tests: an operator with a password, a signed-in client, chats."""

import pytest
from django.test import Client

from apps.agents.tests.factories import HumanAgentFactory
from apps.chats.tests.factories import ChatFactory, ContactFactory, MessageFactory

PASSWORD = "Correct-Horse-42"


@pytest.fixture
def operator(widget):
    agent = HumanAgentFactory(widget=widget, name="Olga", email="olga@example.com")
    agent.user.set_password(PASSWORD)
    agent.user.save()
    return agent


@pytest.fixture
def colleague(widget):
    return HumanAgentFactory(widget=widget, name="Pavel", email="pavel@example.com")


@pytest.fixture
def console(operator):
    client = Client()
    client.force_login(operator.user)
    return client


@pytest.fixture
def htmx(operator):
    """A signed-in client whose requests come from htmx."""
    client = Client(headers={"HX-Request": "true"})
    client.force_login(operator.user)
    return client


def make_chat(widget, *, name="Anna", body="Hello there", **kwargs):
    chat = ChatFactory(contact=ContactFactory(widget=widget, name=name), **kwargs)
    if body:
        MessageFactory(chat=chat, body=body)
    return chat


@pytest.fixture
def chat(widget):
    return make_chat(widget)


@pytest.fixture
def foreign_chat(other_widget):
    return make_chat(other_widget, name="Stranger", body="Not yours")


@pytest.fixture
def owner(widget):
    """The widget's owner (role `owner`), who reaches the settings pages."""
    agent = HumanAgentFactory(widget=widget, name="Oscar", email="oscar@example.com", role="owner")
    agent.user.set_password(PASSWORD)
    agent.user.save()
    return agent


@pytest.fixture
def owner_console(owner):
    client = Client()
    client.force_login(owner.user)
    return client


@pytest.fixture
def owner_htmx(owner):
    client = Client(headers={"HX-Request": "true"})
    client.force_login(owner.user)
    return client
