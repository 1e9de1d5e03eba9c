"""PostgreSQL's planner knows how each widget's chats spread over the statuses (migration
0018_chat_widget_status_statistics): a widget with few open chats among many closed ones is
estimated at about its own open chats, not at the share of open chats across every widget. It
knows that an operator's chats are all of one widget (0020_chat_agent_widget_statistics), and it
has no widget-only index to walk a widget's every chat with (0019_chat_widget_no_own_index)."""

import pytest
from django.db import connection

from apps.chats.models import Chat, Contact
from tests.support.factories import AgentFactory, WidgetFactory
from tests.support.plans import estimate

pytestmark = [pytest.mark.postgres, pytest.mark.django_db]

CHATS = 2000
OPERATORS = 4


def chats(widget, *, open_every: int) -> None:
    contacts = Contact.objects.bulk_create(Contact(widget=widget) for _ in range(CHATS))
    Chat.objects.bulk_create(
        Chat(
            widget=widget,
            contact=contact,
            status=Chat.Status.ACTIVE if n % open_every == 0 else Chat.Status.EXPIRED,
        )
        for n, contact in enumerate(contacts)
    )


def test_a_widgets_open_chats_are_estimated_from_its_own_statuses():
    busy, quiet = WidgetFactory(), WidgetFactory()
    chats(busy, open_every=1)  # every chat open
    chats(quiet, open_every=100)  # 20 open among 2,000
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE chats_chat")
    # Without the statistics: 2,000 chats of the widget times the open share of all (2,020 of 4,000).
    assert estimate(Chat.objects.filter(widget=quiet, status=Chat.Status.ACTIVE)) <= 100


def test_an_operators_chats_are_estimated_as_all_in_their_widget():
    ours, other = WidgetFactory(), WidgetFactory()
    operators = {}
    for widget in (ours, other):
        operators[widget] = [AgentFactory(widget=widget) for _ in range(OPERATORS)]
        contacts = Contact.objects.bulk_create(Contact(widget=widget) for _ in range(CHATS))
        Chat.objects.bulk_create(
            Chat(widget=widget, contact=contact, agent=operators[widget][n % OPERATORS])
            for n, contact in enumerate(contacts)
        )
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE chats_chat")
    # The operator has 500 chats. Without the statistics: 500 times the widget's half of all chats.
    assert estimate(Chat.objects.filter(widget=ours, agent=operators[ours][0])) >= CHATS // OPERATORS * 4 // 5


def test_no_index_of_the_chats_holds_the_widget_alone():
    with connection.cursor() as cursor:
        constraints = connection.introspection.get_constraints(cursor, Chat._meta.db_table)
    assert not [name for name, spec in constraints.items() if spec["index"] and spec["columns"] == ["widget_id"]]
