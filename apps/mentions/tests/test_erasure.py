"""A contact's erasure: its chats' mentions read as missing from the moment it is accepted and are
deleted with the chats."""

import uuid

import pytest

from apps.agents.tests.factories import HumanAgentFactory
from apps.chats.tests.factories import ChatFactory, ContactFactory
from apps.erasure.models import PendingErasure
from apps.mentions import selectors
from apps.mentions.models import Mention
from apps.mentions.tests.factories import MentionFactory, NoteFactory
from apps.privacy import services as privacy

pytestmark = pytest.mark.django_db


def test_an_erased_contacts_mentions_are_hidden_then_deleted(api, widget):
    bob = HumanAgentFactory(widget=widget, name="Bob")
    gone = ContactFactory(widget=widget)
    kept = MentionFactory(message=NoteFactory(chat=ChatFactory(contact=ContactFactory(widget=widget))), agent=bob)
    erased = MentionFactory(message=NoteFactory(chat=ChatFactory(contact=gone)), agent=bob)
    client = api()
    response = client.post(f"/api/v1/contacts/{gone.guid}/erase", HTTP_X_SERVICE_IDEMPOTENCY_KEY=uuid.uuid4().hex)
    assert response.status_code == 202

    # accepted: the mention reads as missing everywhere at once
    assert [row["id"] for row in client.get("/api/v1/mentions").json()["data"]] == [kept.pk]
    assert client.post(f"/api/v1/mentions/{erased.pk}/read").status_code == 404
    assert selectors.count_unread(widget=widget, agent_id=bob.pk) == 1

    # the worker ran: the row is gone with its chat
    privacy.erase_contact(pending_id=PendingErasure.objects.get(contact_id=gone.pk).pk)
    assert list(Mention.objects.values_list("pk", flat=True)) == [kept.pk]
