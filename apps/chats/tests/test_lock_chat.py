"""lock_chat: the one way a writer takes a chat by id, and the visitor's room taken by contact."""

import re

import psycopg
import pytest
from django.db import connection, transaction
from django.db.transaction import TransactionManagementError
from django.test.utils import CaptureQueriesContext

from apps.chats import selectors
from apps.chats.models import Chat
from apps.chats.services import AGENT_MESSAGE_RELATED, MessageInput, lock_chat, post_client_message
from apps.chats.tests.factories import ChatFactory, ContactFactory
from tests.support.factories import AgentFactory, WidgetFactory

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


@pytest.mark.parametrize("key", [2**63, -(2**63) - 1])
def test_an_id_outside_the_column_is_not_found(key):
    chat = ChatFactory()
    with transaction.atomic(), pytest.raises(Chat.DoesNotExist):
        lock_chat(widget=chat.widget, chat=Chat(pk=key))


@pytest.mark.skipif(not connection.features.has_select_for_update, reason="SQLite has no row locks")
@pytest.mark.django_db(transaction=True)
def test_nothing_locks_outside_a_transaction():
    chat = ChatFactory()
    for related in [("widget",), ("widget",), ("contact",)]:  # compiled, then compiled already, then a new shape
        with pytest.raises(TransactionManagementError):
            lock_chat(widget=chat.widget, chat=chat, related=related)
    with transaction.atomic():
        assert lock_chat(widget=chat.widget, chat=chat, related=("widget",)) == chat


@pytest.mark.skipif(connection.vendor != "postgresql", reason="row locks are PostgreSQL's")
@pytest.mark.django_db(transaction=True)
def test_only_the_chats_row_is_locked():
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


def test_a_visitor_message_reads_its_existing_room_once_and_locked():
    # given a contact whose room exists
    widget = WidgetFactory()
    chat = ChatFactory(contact__widget=widget)
    post = {"widget": widget, "contact": chat.contact, "data": MessageInput(type="text", body="hi")}
    post_client_message(**post)  # compiled
    opened = []
    # when the contact writes again
    with CaptureQueriesContext(connection) as ctx:
        message = post_client_message(**post, on_new_room=opened.append)
    # then the room is read by one statement, which locks it, and no room is announced
    chat_reads = [
        q["sql"] for q in ctx.captured_queries if q["sql"].startswith("SELECT") and 'FROM "chats_chat"' in q["sql"]
    ]
    assert len(chat_reads) == 1
    if connection.features.has_select_for_update:
        assert 'FOR UPDATE OF "chats_chat"' in chat_reads[0]
    assert message.chat_id == chat.pk and opened == []


def test_the_first_message_announces_its_new_room_once():
    widget = WidgetFactory()
    contact = ContactFactory(widget=widget)
    opened = []
    post = {
        "widget": widget,
        "contact": contact,
        "data": MessageInput(type="text", body="hi"),
        "on_new_room": opened.append,
    }
    first = post_client_message(**post)
    second = post_client_message(**post)
    assert [chat.pk for chat in opened] == [first.chat_id] == [second.chat_id]
    assert Chat.objects.filter(widget=widget, contact=contact).count() == 1


def test_another_widgets_contact_finds_no_room_of_this_widget():
    chat = ChatFactory()
    other = WidgetFactory()
    with transaction.atomic():
        assert selectors.locked_room(widget_id=other.pk, contact_id=chat.contact_id, channel=chat.channel) is None
        assert selectors.locked_room(widget_id=chat.widget_id, contact_id=chat.contact_id, channel=chat.channel) == chat


def _chat_reads(ctx) -> int:
    return sum(1 for q in ctx.captured_queries if q["sql"].startswith("SELECT") and 'FROM "chats_chat"' in q["sql"])


def test_a_chat_locked_again_in_this_transaction_is_one_primary_key_lock():
    # lock_chat remembers nothing: a second lock in the same transaction reads and locks the row
    # again, in one statement by primary key (the lock is held already, so nothing waits)
    widget = WidgetFactory()
    chat = ChatFactory(contact__widget=widget, agent=AgentFactory(widget=widget))
    with transaction.atomic():
        locked = lock_chat(widget=widget, chat=chat, related=AGENT_MESSAGE_RELATED)
        with CaptureQueriesContext(connection) as ctx:
            again = lock_chat(widget=widget, chat=locked, related=AGENT_MESSAGE_RELATED)
        reads = [q["sql"] for q in ctx.captured_queries if q["sql"].startswith("SELECT")]
        assert len(reads) == 1 and _chat_reads(ctx) == 1
        assert re.search(rf'"chats_chat"\."id" = \(?{chat.pk}\b', reads[0])  # the bound id, by primary key
        if connection.features.has_select_for_update:
            assert 'FOR UPDATE OF "chats_chat"' in reads[0]
        assert again is not locked and again == locked and again.agent == chat.agent
        # another widget never gets it, locked or not
        with pytest.raises(Chat.DoesNotExist):
            lock_chat(widget=WidgetFactory(), chat=locked, related=("widget",))


def test_a_lock_rolled_back_with_its_savepoint_is_taken_again():
    widget = WidgetFactory()
    chat = ChatFactory(contact__widget=widget)
    with transaction.atomic():
        try:
            with transaction.atomic():
                locked = lock_chat(widget=widget, chat=chat)
                raise RuntimeError("rolled back")
        except RuntimeError:
            pass
        with CaptureQueriesContext(connection) as ctx:
            again = lock_chat(widget=widget, chat=locked)
        assert again is not locked and _chat_reads(ctx) == 1


@pytest.mark.django_db(transaction=True)
def test_a_lock_of_a_committed_transaction_is_taken_again():
    widget = WidgetFactory()
    chat = ChatFactory(contact__widget=widget)
    with transaction.atomic():
        locked = lock_chat(widget=widget, chat=chat)
    with transaction.atomic():
        with CaptureQueriesContext(connection) as ctx:
            again = lock_chat(widget=widget, chat=locked)
        assert again is not locked and _chat_reads(ctx) == 1
    with transaction.atomic():
        lock_chat(widget=widget, chat=again)
        transaction.set_rollback(True)
    with transaction.atomic(), CaptureQueriesContext(connection) as ctx:
        assert lock_chat(widget=widget, chat=again) is not again
    assert _chat_reads(ctx) == 1
