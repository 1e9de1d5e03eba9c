"""A search the trigram index cannot narrow (a pattern shorter than a trigram) walks the chats in the
list's order and probes each chat's own messages, stopping at the page: PostgreSQL's plan reaches the
messages only through a per-chat subplan, never through a join over every message of the widget."""

import pytest
from django.db import connection

from apps.chats import selectors
from apps.chats.models import Chat, Contact, Message
from tests.support.factories import WidgetFactory
from tests.support.plans import nodes, plan

pytestmark = [pytest.mark.postgres, pytest.mark.django_db]

CHATS = 400


def test_a_two_letter_search_probes_each_chat_instead_of_joining_every_message():
    widget = WidgetFactory()
    contacts = Contact.objects.bulk_create(Contact(widget=widget) for _ in range(CHATS))
    chats = Chat.objects.bulk_create(Chat(widget=widget, contact=contact) for contact in contacts)
    Message.objects.bulk_create(
        Message(widget=widget, chat=chat, author_kind=Message.Author.CLIENT, body="ok, thanks!" if n % 4 else "Hello")
        for n, chat in enumerate(chats)
    )
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE chats_chat; ANALYZE chats_message")
    page = selectors.filter_chats(Chat.objects.filter(widget=widget), widget=widget, q="ok").order_by(
        "-last_message_at", "-id"
    )
    assert len(page.values_list("pk", flat=True)) == CHATS * 3 // 4
    root = plan(page.values("pk")[:50])
    probes = [node for node in nodes(root) if node.get("Relation Name") == "chats_message"]
    assert probes and all(_under_subplan(root, node) for node in probes), root
    assert not [node for node in nodes(root) if "Join" in node["Node Type"] or node["Node Type"] == "Hash"], root


def _under_subplan(root: dict, target: dict) -> bool:
    """Whether `target` lies under a node that runs as a subplan (`Parent Relationship: SubPlan`)."""

    def walk(node: dict, inside: bool) -> bool:
        inside = inside or node.get("Parent Relationship") == "SubPlan"
        if node is target:
            return inside
        return any(walk(child, inside) for child in node.get("Plans", ()))

    return walk(root, False)
