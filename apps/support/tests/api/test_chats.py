"""Support chats, messages and attachments."""

from __future__ import annotations

import base64
import io
import tracemalloc
from datetime import timedelta

import pytest
from django.core.files.base import ContentFile
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from apps.chats import services as chat_services
from apps.chats.models import Chat, Message
from apps.core.models import File
from apps.erasure.models import PendingErasure
from apps.support.models import ChatAccount, Ticket
from tests.core import bombs
from tests.support.plugin import assert_problem

SINCE = "updated_since"


def _since(days=1):
    return (timezone.now() - timedelta(days=days)).isoformat()


def _age(chat, seconds):
    """Make the chat's last message `seconds` old."""
    at = timezone.now() - timedelta(seconds=seconds)
    Chat.objects.filter(pk=chat.pk).update(last_message_at=at)
    Message.objects.filter(pk=chat.last_message_id).update(created_at=at)


def test_updated_since_is_required_and_at_most_7_days_back(support):
    problem = assert_problem(support.client.get("/api/v1/support/chats"), 422)
    assert SINCE in problem["errors"]
    problem = assert_problem(support.client.get("/api/v1/support/chats", {SINCE: _since(8)}), 422)
    assert SINCE in problem["errors"]
    assert support.client.get("/api/v1/support/chats", {SINCE: _since(6)}).status_code == 200


@pytest.mark.parametrize(
    "params",
    [
        {"awaiting": "nobody"},
        {"min_idle_sec": "-1"},
        {"min_idle_sec": "x"},
        {"limit": "201"},
        {"limit": "0"},
        {"has_open_ticket": "yes"},
        {"channel": "Not A Channel"},
        {"cursor": "abc"},
        {"surprise": "1"},
    ],
)
def test_bad_list_parameters_are_422(support, params):
    assert_problem(support.client.get("/api/v1/support/chats", {SINCE: _since(), **params}), 422)


def test_list_filters_idle_awaiting_channel_and_open_ticket(support):
    waiting = support.chat(text="help please")
    _age(waiting, 600)
    fresh = support.chat(text="just wrote")
    answered = support.chat(text="question")
    chat_services.post_agent_message(
        widget=support.widget, chat=answered, agent=support.operator, data=chat_services.MessageInput(body="answer")
    )
    answered.refresh_from_db()
    _age(answered, 600)
    telegram = support.chat(text="from tg", channel="tg")
    _age(telegram, 600)
    Ticket.objects.create(widget=support.widget, number=1, chat=telegram, app_user_id="u1")

    def ids(**params):
        response = support.client.get("/api/v1/support/chats", {SINCE: _since(), **params})
        assert response.status_code == 200, response.content
        return {c["id"] for c in response.json()["data"]}

    assert ids() == {waiting.pk, answered.pk, telegram.pk}  # fresh is not idle 180 s yet
    assert ids(min_idle_sec="0") == {waiting.pk, fresh.pk, answered.pk, telegram.pk}
    assert ids(awaiting="client") == {waiting.pk, telegram.pk}
    assert ids(channel="tg") == {telegram.pk}
    assert ids(has_open_ticket="true") == {telegram.pk}
    assert ids(has_open_ticket="false") == {waiting.pk, answered.pk}
    assert len(support.client.get("/api/v1/support/chats", {SINCE: _since(), "limit": "1"}).json()["data"]) == 1


def test_list_excludes_spam_and_other_widgets(support, other_widget):
    spam = support.chat()
    Chat.objects.filter(pk=spam.pk).update(status="spam")
    contact = chat_services.create_contact(widget=other_widget)
    chat_services.post_client_message(widget=other_widget, contact=contact, data=chat_services.MessageInput(body="x"))
    response = support.client.get("/api/v1/support/chats", {SINCE: _since(), "min_idle_sec": "0"})
    assert response.json()["data"] == []


def test_list_query_count_does_not_grow_with_chats(support):
    for _ in range(2):
        support.chat()

    def count():
        with CaptureQueriesContext(connection) as ctx:
            response = support.client.get("/api/v1/support/chats", {SINCE: _since(), "min_idle_sec": "0"})
        assert response.status_code == 200
        return len(ctx.captured_queries), len(response.json()["data"])

    count()  # warm up: the token's last-used time is written once a minute
    few, n_few = count()
    for _ in range(5):
        support.chat()
    many, n_many = count()
    assert n_many == n_few + 5
    assert many == few


def test_detail_carries_delivery_account_lease_and_unanswered(support):
    chat = support.chat(text="first")
    chat_services.post_client_message(
        widget=support.widget, contact=chat.contact, data=chat_services.MessageInput(body="second")
    )
    ChatAccount.objects.create(
        widget=support.widget,
        chat=chat,
        link="verified",
        app_user_id="user-7",
        email="c@shop.ru",
        link_source="email_code",
        identity_expires_at=timezone.now() + timedelta(hours=2),
        grant_expires_at=timezone.now() + timedelta(minutes=10),
    )
    body = support.client.get(f"/api/v1/support/chats/{chat.pk}").json()
    assert body["delivery"] == "widget_on_return"
    assert body["unanswered_count"] == 2
    assert body["last_message"]["sender"]["kind"] == "client"
    assert body["lease"] is None
    account = body["account"]
    assert account["link"] == "verified" and account["email"] == "c@shop.ru" and account["app_user_id"] == "user-7"
    assert account["link_source"] == "email_code" and account["regrant_needed"] is False
    # The list carries the account without the e-mail (detail endpoints only).
    listed = support.client.get("/api/v1/support/chats", {SINCE: _since(), "min_idle_sec": "0"}).json()["data"][0]
    assert listed["account"]["email"] is None and listed["account"]["link"] == "verified"


def test_a_chat_without_account_row_is_anonymous_with_every_field(support):
    chat = support.chat()
    account = support.client.get(f"/api/v1/support/chats/{chat.pk}").json()["account"]
    assert set(account) == {
        "link",
        "email",
        "app_user_id",
        "identity_expires_at",
        "regrant_needed",
        "code_pending",
        "code_expires_at",
        "last_code_result",
        "last_code_at",
        "email_requested",
    }
    assert account["link"] == "anonymous"


def test_a_foreign_or_missing_chat_is_the_same_404(support, other_widget):
    contact = chat_services.create_contact(widget=other_widget)
    foreign = chat_services.post_client_message(
        widget=other_widget, contact=contact, data=chat_services.MessageInput(body="x")
    ).chat
    for chat_id in (foreign.pk, 999999, "abc", 2**70):
        for suffix in ("", "/messages"):
            assert_problem(support.client.get(f"/api/v1/support/chats/{chat_id}{suffix}"), 404, "not_found")


def test_a_chat_whose_contact_is_under_erasure_is_the_same_404_and_never_listed(support):
    chat = support.chat()
    PendingErasure.objects.create(widget=support.widget, contact_id=chat.contact_id)
    for suffix in ("", "/messages"):
        assert_problem(support.client.get(f"/api/v1/support/chats/{chat.pk}{suffix}"), 404, "not_found")
    response = support.client.get("/api/v1/support/chats", {SINCE: _since(), "min_idle_sec": "0"})
    assert response.json()["data"] == []


def test_messages_oldest_first_after_id_and_include(support):
    chat = support.chat(text="one")
    chat_services.post_agent_message(
        widget=support.widget,
        chat=chat,
        agent=support.operator,
        data=chat_services.MessageInput(body="private", visibility="note"),
    )
    chat_services.request_rating(widget=support.widget, chat=chat)
    chat_services.post_client_message(
        widget=support.widget, contact=chat.contact, data=chat_services.MessageInput(body="two")
    )
    url = f"/api/v1/support/chats/{chat.pk}/messages"
    body = support.client.get(url).json()
    assert [m["text"] for m in body["data"]] == ["one", "two"]
    assert [m["sender"]["kind"] for m in body["data"]] == ["client", "client"]
    assert body["chat"]["account"]["link"] == "anonymous"
    all_kinds = support.client.get(url, {"include": "system,notes"}).json()["data"]
    assert len(all_kinds) == 4
    assert {m["sender"]["kind"] for m in all_kinds} == {"client", "support", "system"}
    first_id = body["data"][0]["id"]
    assert [m["text"] for m in support.client.get(url, {"after_id": str(first_id)}).json()["data"]] == ["two"]
    assert len(support.client.get(url, {"limit": "1"}).json()["data"]) == 1
    for bad in ({"limit": "201"}, {"include": "everything"}, {"after_id": "x"}):
        assert_problem(support.client.get(url, bad), 422)


def _attach(support, chat, name, data: bytes, content_type="application/octet-stream"):
    file = File.objects.create(
        widget=support.widget,
        stored=ContentFile(data, name=name),
        original_name=name,
        content_type=content_type,
        size=len(data),
    )
    message = chat_services.post_client_message(
        widget=support.widget, contact=chat.contact, data=chat_services.MessageInput(type="file", file_id=file.pk)
    )
    return f"/api/v1/support/chats/{chat.pk}/messages/{message.pk}/attachment"


PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 32


def _docx_bytes(text):
    import docx

    document = docx.Document()
    document.add_paragraph(text)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def _odt_bytes(text):
    from odf.opendocument import OpenDocumentText
    from odf.text import P

    document = OpenDocumentText()
    document.text.addElement(P(text=text))
    out = io.BytesIO()
    document.write(out)
    return out.getvalue()


def _pdf_bytes(text=None):
    from pypdf import PdfWriter

    writer = PdfWriter()
    writer.add_blank_page(width=200, height=200)
    if text:
        from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject

        page = writer.pages[0]
        font = DictionaryObject(
            {
                NameObject("/Type"): NameObject("/Font"),
                NameObject("/Subtype"): NameObject("/Type1"),
                NameObject("/BaseFont"): NameObject("/Helvetica"),
            }
        )
        page[NameObject("/Resources")] = DictionaryObject(
            {NameObject("/Font"): DictionaryObject({NameObject("/F1"): writer._add_object(font)})}
        )
        stream = DecodedStreamObject()
        stream.set_data(f"BT /F1 12 Tf 20 100 Td ({text}) Tj ET".encode())
        page[NameObject("/Contents")] = writer._add_object(stream)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def test_an_image_comes_as_base64(support):
    chat = support.chat()
    body = support.client.get(_attach(support, chat, "photo.png", PNG)).json()
    assert body["kind"] == "image" and body["mime_type"] == "image/png"
    assert base64.b64decode(body["data_base64"]) == PNG
    assert body["chat"]["id"] == chat.pk


@pytest.mark.parametrize(
    "name,data,expected",
    [
        ("notes.txt", "привет, world".encode(), "привет, world"),
        ("app.log", b"ERROR 42", "ERROR 42"),
        ("t.csv", b"a,b\n1,2", "a,b\n1,2"),
        ("d.json", b'{"a": 1}', '{"a": 1}'),
        ("r.md", b"# Title", "# Title"),
        ("w.docx", _docx_bytes("Order 77 is late"), "Order 77 is late"),
        ("o.odt", _odt_bytes("Refund please"), "Refund please"),
        ("p.pdf", _pdf_bytes("Invoice 12"), "Invoice 12"),
    ],
)
def test_documents_come_as_text(support, name, data, expected):
    chat = support.chat()
    response = support.client.get(_attach(support, chat, name, data))
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["kind"] == "text"
    assert expected in body["text"]


@pytest.mark.parametrize("name", ["scan.pdf", "photo.heic", "old.doc", "sheet.xls", "sheet.xlsx", "letter.rtf"])
def test_listed_types_without_text_come_as_the_file(support, name):
    chat = support.chat()
    data = _pdf_bytes() if name.endswith(".pdf") else b"binary-content"
    response = support.client.get(_attach(support, chat, name, data))
    assert response.status_code == 200
    assert response.content == data
    assert response["Content-Disposition"] == "attachment"


@pytest.mark.parametrize("name,data", [("run.exe", b"MZ..."), ("page.html", b"<html>"), ("broken.docx", b"not a zip")])
def test_other_types_are_415(support, name, data):
    chat = support.chat()
    assert_problem(support.client.get(_attach(support, chat, name, data)), 415, "unsupported_media_type")


@pytest.mark.parametrize(
    "name,member,lie",
    [
        ("bomb.docx", "word/document.xml", None),
        ("bomb.docx", "mimetype", None),
        ("liar.docx", "word/document.xml", 1000),
    ],
)
def test_a_document_bomb_is_415_and_never_inflated_whole(support, name, member, lie):
    # given a visitor's attachment of a couple of MB whose member inflates to 300 MiB
    chat = support.chat()
    url = _attach(support, chat, name, bombs.docx_with_bomb(member, 300 * 1024 * 1024, lie=lie))
    tracemalloc.start()
    try:
        # when a support agent opens it
        response = support.client.get(url)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # then refused as unreadable, with at most a piece of it in memory
    assert_problem(response, 415, "unsupported_media_type")
    assert peak < 64 * 1024 * 1024


def test_a_message_of_another_chat_or_without_file_is_404(support):
    chat = support.chat()
    other = support.chat()
    url = _attach(support, other, "a.txt", b"x")
    message_id = url.split("/messages/")[1].split("/")[0]
    assert_problem(support.client.get(f"/api/v1/support/chats/{chat.pk}/messages/{message_id}/attachment"), 404)
    assert_problem(
        support.client.get(f"/api/v1/support/chats/{chat.pk}/messages/{chat.last_message_id}/attachment"), 404
    )


def test_an_attachment_a_contact_under_erasure_uploaded_is_404_in_another_chat(support):
    from apps.chats.models import VisitorUpload
    from apps.chats.tests.factories import ContactFactory

    # given a visitor's upload shown in another contact's chat too
    chat = support.chat()
    url = _attach(support, chat, "passport.txt", b"passport")
    message = Message.objects.get(pk=int(url.split("/messages/")[1].split("/")[0]))
    uploader = ContactFactory(widget=support.widget)
    VisitorUpload.objects.create(file_id=message.file_id, widget=support.widget, contact=uploader)
    assert support.client.get(url).status_code == 200
    # when the uploader's erasure is accepted
    PendingErasure.objects.create(widget=support.widget, contact_id=uploader.pk)
    # then the file reads as missing, as the erasure deletes it
    assert_problem(support.client.get(url), 404)
