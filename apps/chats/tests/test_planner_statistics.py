"""PostgreSQL's planner knows how each widget's chats spread over the statuses (migration
0018_chat_widget_status_statistics): a widget with few open chats among many closed ones is
estimated at about its own open chats, not at the share of open chats across every widget."""

import json

import pytest
from django.db import connection

from apps.chats.models import Chat, Contact
from tests.support.factories import WidgetFactory

pytestmark = [pytest.mark.postgres, pytest.mark.django_db]

CHATS = 2000


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
        open_chats = Chat.objects.filter(widget=quiet, status=Chat.Status.ACTIVE)
        sql, params = open_chats.values("pk").query.sql_with_params()
        cursor.execute(f"EXPLAIN (FORMAT JSON) {sql}", params)
        plan = cursor.fetchone()[0]
    estimate = (json.loads(plan) if isinstance(plan, str) else plan)[0]["Plan"]["Plan Rows"]
    # Without the statistics: 2,000 chats of the widget times the open share of all (2,020 of 4,000).
    assert estimate <= 100, estimate
