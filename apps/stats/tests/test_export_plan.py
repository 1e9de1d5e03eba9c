"""An export page reads whether each chat's SLA was breached by probing that chat's clocks on their
(chat, kind) index: PostgreSQL's plan never reads the breached clocks of every widget, which another
widget's history would make a scan of its whole SLA record for each page of ours."""

from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection

from apps.chats.models import Chat, Contact
from apps.routing.models import SlaClock
from apps.stats import export
from apps.stats.models import ChatFacts
from apps.stats.windows import Window
from tests.support.factories import WidgetFactory
from tests.support.plans import nodes, plan

pytestmark = [pytest.mark.postgres, pytest.mark.django_db]

OURS = 600
THEIRS = 3000
JAN = datetime(2025, 1, 1, tzinfo=UTC)


def _chats(widget, count: int) -> list[Chat]:
    contacts = Contact.objects.bulk_create(Contact(widget=widget) for _ in range(count))
    return Chat.objects.bulk_create(Chat(widget=widget, contact=contact) for contact in contacts)


def test_an_export_page_probes_its_own_chats_clocks_whatever_other_widgets_breached():
    ours, theirs = WidgetFactory(), WidgetFactory()
    ChatFacts.objects.bulk_create(
        ChatFacts(
            chat=chat,
            widget=ours,
            created_at=JAN + timedelta(minutes=n),
            day=JAN.date(),
            channel="widget",
            contact_id=chat.contact_id,
        )
        for n, chat in enumerate(_chats(ours, OURS))
    )
    SlaClock.objects.bulk_create(
        SlaClock(
            widget=theirs,
            chat=chat,
            kind=SlaClock.Kind.FIRST_RESPONSE,
            started_at=JAN,
            due_at=JAN + timedelta(minutes=1),
            breached_at=JAN + timedelta(minutes=1),
        )
        for chat in _chats(theirs, THEIRS)
    )
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE stats_chatfacts; ANALYZE routing_slaclock; ANALYZE erasure_pendingerasure")
    root = plan(export._facts(ours.pk, Window(JAN, JAN + timedelta(days=1)))[: export.PAGE_SIZE])
    clocks = [node for node in nodes(root) if node.get("Relation Name") == "routing_slaclock"]
    assert clocks, root
    assert all("chat_id" in node.get("Index Cond", "") for node in clocks), root
