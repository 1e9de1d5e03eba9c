"""Deleting widgets and accounts in Django admin: the confirmation page counts what goes along, in a
fixed number of statements whatever the widget holds, and refuses what the staff user may not delete
(a contact leaves by erasure only); the deletion goes table by table in batches, so a widget of any
size is deleted."""

import pytest
from django.core.files.base import ContentFile
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.chats.models import Chat, Message
from apps.chats.tests.factories import ChatFactory, ContactFactory
from apps.core.files import store_file
from apps.core.models import Account, File, OutboxEvent, Widget
from tests.support.admin import staff_client
from tests.support.factories import WidgetFactory

pytestmark = pytest.mark.django_db


def widget_delete_page(client, widget):
    return client.get(f"/admin/core/widget/{widget.pk}/delete/")


def with_messages(widget, count: int) -> Chat:
    chat = ChatFactory(contact=ContactFactory(widget=widget))
    Message.objects.bulk_create(
        [Message(widget=widget, chat=chat, author_kind=Message.Author.CLIENT, body="x") for _ in range(count)],
        batch_size=5000,
    )
    return chat


def test_the_confirmation_counts_rows_in_the_same_statements_for_few_or_many_messages():
    client = staff_client("core", "delete_widget", "view_widget", "issue_for_any_widget")
    small, large = WidgetFactory(), WidgetFactory()
    with_messages(small, 2)
    with_messages(large, 300)
    widget_delete_page(client, small)  # the session and the admin's first reads
    statements = []
    for widget in (small, large):
        with CaptureQueriesContext(connection) as ctx:
            response = widget_delete_page(client, widget)
        assert response.status_code == 200
        statements.append(len(ctx.captured_queries))
        # messages are counted, never read row by row (nor named by key in one statement)
        assert [
            q["sql"] for q in ctx.captured_queries if '"chats_message"' in q["sql"] and "COUNT(" not in q["sql"]
        ] == []
    assert statements[0] == statements[1]
    assert dict(response.context["model_count"])["messages"] == 300


def test_a_widget_with_contacts_is_refused_and_kept():
    client = staff_client("core", "delete_widget", "view_widget", "issue_for_any_widget")
    widget = WidgetFactory()
    with_messages(widget, 3)
    page = widget_delete_page(client, widget)
    assert page.status_code == 200 and "contact" in page.context["perms_lacking"]
    assert client.post(f"/admin/core/widget/{widget.pk}/delete/", {"post": "yes"}).status_code == 403
    assert Widget.objects.filter(pk=widget.pk).exists() and Message.objects.filter(widget=widget).count() == 3


def with_events(widget, count: int) -> None:
    OutboxEvent.objects.bulk_create(
        [OutboxEvent(widget=widget, type="chat.created", data={}) for _ in range(count)], batch_size=5000
    )


def test_a_widget_without_contacts_is_deleted_with_what_it_holds_and_nothing_else():
    client = staff_client("core", "delete_widget", "view_widget", "issue_for_any_widget")
    widget, other = WidgetFactory(), WidgetFactory()
    for each in (widget, other):
        with_events(each, 30)
    page = widget_delete_page(client, widget)
    assert page.status_code == 200 and not page.context["perms_lacking"]
    assert dict(page.context["model_count"])["outbox events"] == 30
    response = client.post(f"/admin/core/widget/{widget.pk}/delete/", {"post": "yes"})
    assert response.status_code == 302
    assert not Widget.objects.filter(pk=widget.pk).exists()
    assert not OutboxEvent.objects.filter(widget_id=widget.pk).exists()
    assert OutboxEvent.objects.filter(widget=other).count() == 30


def test_deleting_an_account_deletes_its_widgets_the_same_way():
    client = staff_client(
        "core", "delete_widget", "view_widget", "delete_account", "view_account", "issue_for_any_widget"
    )
    widget = WidgetFactory()
    with_events(widget, 3)
    account = Account.objects.get(pk=widget.account_id)
    assert client.post(f"/admin/core/account/{account.pk}/delete/", {"post": "yes"}).status_code == 302
    assert not Account.objects.filter(pk=account.pk).exists() and not Widget.objects.filter(pk=widget.pk).exists()
    assert not OutboxEvent.objects.filter(widget_id=widget.pk).exists()


def test_the_bulk_action_and_the_account_page_count_the_widgets_rows_too():
    client = staff_client(
        "core", "delete_widget", "view_widget", "delete_account", "view_account", "issue_for_any_widget"
    )
    first, second = WidgetFactory(), WidgetFactory()
    with_messages(first, 4)
    with_messages(second, 5)
    action = client.post(
        "/admin/core/widget/", {"action": "delete_selected", "_selected_action": [first.pk, second.pk]}
    )
    assert action.status_code == 200 and "contact" in action.context["perms_lacking"]
    assert dict(action.context["model_count"])["messages"] == 9
    account = Account.objects.get(pk=first.account_id)
    page = client.get(f"/admin/core/account/{account.pk}/delete/")
    assert page.status_code == 200 and "contact" in page.context["perms_lacking"]
    # a staff user without the widget's delete permission may not delete an account that has one
    viewer = staff_client("core", "delete_account", "view_account", "issue_for_any_widget")
    assert "widget" in viewer.get(f"/admin/core/account/{account.pk}/delete/").context["perms_lacking"]


@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's limit of 65,535 parameters")
def test_a_widget_with_more_events_than_a_statement_takes_keys_is_deleted():
    client = staff_client("core", "delete_widget", "view_widget", "issue_for_any_widget")
    widget = WidgetFactory()
    with_events(widget, 66_000)
    response = client.post(f"/admin/core/widget/{widget.pk}/delete/", {"post": "yes"})
    assert response.status_code == 302
    assert not Widget.objects.filter(pk=widget.pk).exists()
    assert not OutboxEvent.objects.filter(widget_id=widget.pk).exists()


@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's limit of 65,535 parameters")
def test_the_confirmation_of_a_widget_with_more_messages_than_a_statement_takes_keys_answers():
    client = staff_client("core", "delete_widget", "view_widget", "issue_for_any_widget")
    widget = WidgetFactory()
    with_messages(widget, 66_000)
    response = widget_delete_page(client, widget)
    assert response.status_code == 200
    assert dict(response.context["model_count"])["messages"] == 66_000


def test_the_stored_bytes_of_the_widgets_files_go_once_the_deletion_commits(django_capture_on_commit_callbacks):
    client = staff_client("core", "delete_widget", "view_widget", "issue_for_any_widget")
    widget, other = WidgetFactory(), WidgetFactory()
    mine, theirs = (
        store_file(widget=each, content=ContentFile(b"bytes"), original_name="a.txt", content_type="text/plain", size=5)
        for each in (widget, other)
    )
    storage = File._meta.get_field("stored").storage
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(f"/admin/core/widget/{widget.pk}/delete/", {"post": "yes"})
        assert storage.exists(mine.stored.name)  # not before the commit
    assert response.status_code == 302 and not File.objects.filter(pk=mine.pk).exists()
    assert not storage.exists(mine.stored.name)
    assert storage.exists(theirs.stored.name) and File.objects.filter(pk=theirs.pk).exists()
