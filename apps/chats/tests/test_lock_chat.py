"""lock_chat: the one way a writer takes a chat, compiled once (apps.core.statements.ModelStatement)."""

import psycopg
import pytest
from django.db import connection, transaction
from django.db.transaction import TransactionManagementError
from django.test.utils import CaptureQueriesContext

from apps.chats.models import Chat
from apps.chats.services import lock_chat
from apps.chats.tests.factories import ChatFactory
from apps.core.testing.factories import AgentFactory, WidgetFactory

pytestmark = pytest.mark.django_db

CHAT_FIELDS = [field.attname for field in Chat._meta.concrete_fields]


def test_the_locked_chat_equals_the_orms_with_its_related_rows_loaded():
    widget = WidgetFactory()
    agent = AgentFactory(widget=widget)
    chat = ChatFactory(contact__widget=widget, agent=agent, status=Chat.Status.ACTIVE)
    unassigned = ChatFactory(contact__widget=widget)
    expected = Chat.objects.select_related("widget", "contact", "agent").get(pk=chat.pk)
    with transaction.atomic():
        locked = lock_chat(widget=widget, chat=chat, related=("widget", "contact", "agent"))
        bare = lock_chat(widget=widget, chat=unassigned, related=("widget", "contact", "agent"))
        with CaptureQueriesContext(connection) as ctx:
            assert {f: getattr(locked, f) for f in CHAT_FIELDS} == {f: getattr(expected, f) for f in CHAT_FIELDS}
            assert locked.widget == widget and locked.widget.name == widget.name
            assert locked.contact.guid == chat.contact.guid and locked.contact.widget_id == widget.pk
            assert locked.agent == agent and locked.agent.type == agent.type
            assert bare.agent is None  # a left join: the chat without an agent is found too
        assert ctx.captured_queries == []  # the related rows came with the chat
    assert not locked._state.adding and locked._state.db == "default"
    # saved like any instance the ORM loaded
    with transaction.atomic():
        locked = lock_chat(widget=widget, chat=chat)
        locked.status = Chat.Status.READY
        locked.save(update_fields=["status"])
    assert Chat.objects.get(pk=chat.pk).status == Chat.Status.READY


def test_another_widgets_chat_is_not_found():
    chat = ChatFactory()
    with transaction.atomic(), pytest.raises(Chat.DoesNotExist):
        lock_chat(widget=WidgetFactory(), chat=chat)


@pytest.mark.skipif(not connection.features.has_select_for_update, reason="SQLite has no row locks")
@pytest.mark.django_db(transaction=True)
def test_nothing_locks_outside_a_transaction():
    chat = ChatFactory()
    for related in [("widget",), ("widget",), ("contact",)]:  # compiled, then compiled already, then a new shape
        with pytest.raises(TransactionManagementError):
            lock_chat(widget=chat.widget, chat=chat, related=related)
    with transaction.atomic():
        assert lock_chat(widget=chat.widget, chat=chat, related=("widget",)) == chat


@pytest.mark.skipif(connection.vendor != "postgresql", reason="row locks and prepared statements are PostgreSQL's")
@pytest.mark.django_db(transaction=True)
def test_only_the_chats_row_is_locked_by_one_prepared_statement():
    chat = ChatFactory(agent=AgentFactory())
    chat.agent.widget = chat.widget
    chat.agent.save()
    params = connection.get_connection_params()
    params.pop("cursor_factory", None)
    params.pop("context", None)
    with transaction.atomic():
        for _ in range(3):
            lock_chat(widget=chat.widget, chat=chat, related=("widget", "contact", "agent"))
        with psycopg.connect(**params, autocommit=True) as other:
            for table, pk, locked in [
                ("chats_chat", chat.pk, True),
                ("core_widget", chat.widget_id, False),
                ("chats_contact", chat.contact_id, False),
                ("agents_agent", chat.agent_id, False),
            ]:
                statement = f"SELECT 1 FROM {table} WHERE id = %s FOR UPDATE NOWAIT"  # noqa: S608
                if locked:
                    with pytest.raises(psycopg.errors.LockNotAvailable):
                        other.execute(statement, [pk])
                else:
                    assert other.execute(statement, [pk]).fetchone() == (1,)
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE %s", ['%FOR UPDATE OF "chats_chat"%']
            )
            assert cursor.fetchone()[0] == 1
