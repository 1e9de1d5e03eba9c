"""GET /v1/chats/{id}/transcript: a streamed text/plain attachment, through the test client and the
served application (config.asgi: the body gate, the WSGI adapter, Django)."""

import asyncio
import warnings
from datetime import UTC, datetime, timedelta

import pytest
from asgiref.sync import async_to_sync

from apps.chats import transcript
from apps.chats.models import File, Message
from apps.chats.tests.factories import AgentFactory, ChatFactory, ContactFactory
from tests.support.plugin import assert_problem

pytestmark = pytest.mark.django_db

T0 = datetime(2024, 5, 1, 21, 30, 0, tzinfo=UTC)  # 00:30 of 2 May in Moscow


@pytest.fixture
def chat(widget):
    return ChatFactory(contact=ContactFactory(widget=widget, name="Мария"), created_at=T0)


def url(chat_id) -> str:
    return f"/api/v1/chats/{chat_id}/transcript"


def add(chat, *specs):
    rows = [
        Message(
            widget_id=chat.widget_id,
            chat=chat,
            author_kind=spec.pop("author_kind", Message.Author.CLIENT),
            created_at=spec.pop("created_at", T0 + timedelta(seconds=i)),
            **spec,
        )
        for i, spec in enumerate(specs)
    ]
    return Message.objects.bulk_create(rows)


def read(response) -> bytes:
    return b"".join(response.streaming_content)


# --- success ----------------------------------------------------------------------------------------


def test_streams_a_text_attachment(api, widget, chat):
    agent = AgentFactory(widget=widget, name="Олег", surname="Иванов")
    add(
        chat,
        {"body": "Где мой заказ?"},
        {"body": "Уже в пути\nприедет завтра", "author_kind": Message.Author.AGENT, "agent": agent},
    )

    response = api(scopes=["transcripts:read"]).get(url(chat.pk))

    assert response.status_code == 200
    assert response.streaming
    assert response["Content-Type"] == "text/plain; charset=UTF-8"
    assert response["Content-Disposition"] == f'attachment; filename="chat-{chat.pk}-transcript.txt"'
    assert "Content-Length" not in response
    assert "X-RateLimit-Limit" in response and "X-RateLimit-Remaining" in response
    data = read(response)
    assert not data.startswith(b"\xef\xbb\xbf")
    assert data.decode("utf-8").splitlines() == [
        f"Chat: {chat.pk}",
        "Channel: widget",
        f"Contact: Мария ({chat.contact.guid})",
        "Created: 2024-05-02 00:30:00 (Europe/Moscow)",
        "",
        "[2024-05-02 00:30:00] Мария: Где мой заказ?",
        "[2024-05-02 00:30:01] Олег Иванов: Уже в пути",
        "  приедет завтра",
    ]


def test_accept_text_plain_is_not_refused(api, chat):
    response = api(scopes=["transcripts:read"]).get(url(chat.pk), HTTP_ACCEPT="text/plain")
    assert response.status_code == 200
    assert response["Content-Type"] == "text/plain; charset=UTF-8"


def test_trailing_slash_is_accepted(api, chat):
    assert api(scopes=["transcripts:read"]).get(url(chat.pk) + "/").status_code == 200


def test_only_public_messages_and_canonical_file_names(api, widget, chat):
    stored = File.objects.create(widget=widget, stored="files/r.pdf", original_name="../../etc/report.pdf", size=3)
    add(
        chat,
        {"body": "hello"},
        {"body": "private note", "author_kind": Message.Author.AGENT, "visibility": Message.Visibility.NOTE},
        {"body": "operator e-mail", "author_kind": Message.Author.AGENT, "visibility": Message.Visibility.EMAIL},
        {"body": "operators only", "author_kind": Message.Author.AGENT, "visibility": Message.Visibility.INTERNAL},
        {"type": Message.Type.FILE, "file": stored},
    )

    text = read(api(scopes=["transcripts:read"]).get(url(chat.pk))).decode()

    assert "hello" in text
    assert "private note" not in text and "operator e-mail" not in text and "operators only" not in text
    assert text.endswith("[2024-05-02 00:30:04] Мария: [file: report.pdf]\n")
    assert "etc" not in text and "files/" not in text


def test_size_budget_marker_through_the_api(api, chat, monkeypatch):
    monkeypatch.setattr(transcript, "MAX_MESSAGES", 2)
    add(chat, *({"body": f"m{i}"} for i in range(3)))
    text = read(api(scopes=["transcripts:read"]).get(url(chat.pk))).decode()
    assert text.endswith(": m1\n[Экспорт ограничен безопасным размером]\n")


# --- errors -------------------------------------------------------------------------------------------


def test_without_token_is_401(client, chat):
    assert_problem(client.get(url(chat.pk)), 401, "not_authenticated")


def test_without_the_scope_is_403_missing_scope(api, chat):
    body = assert_problem(api(scopes=["chats:read", "messages:read"]).get(url(chat.pk)), 403, "missing_scope")
    assert body["required_scopes"] == ["transcripts:read"]


def test_internal_department_chat_is_403_internal_room(api, widget):
    chat = ChatFactory(contact=ContactFactory(widget=widget), is_internal=True)
    add(chat, {"body": "internal talk"})
    response = api(scopes=["transcripts:read"]).get(url(chat.pk))
    body = assert_problem(response, 403, "internal_room")
    assert body["type"] == "/api/problems/internal_room"
    assert "internal talk" not in response.content.decode()


def test_foreign_chat_is_the_same_404_as_a_missing_one(api, other_widget):
    foreign = ChatFactory(contact=ContactFactory(widget=other_widget))
    add(foreign, {"body": "secret"})
    client = api(scopes=["transcripts:read"])
    a = assert_problem(client.get(url(foreign.pk)), 404, "not_found")
    b = assert_problem(client.get(url(foreign.pk + 1000)), 404, "not_found")
    assert a.pop("instance") != b.pop("instance")
    assert a == b


def test_foreign_internal_chat_is_404_not_403(api, other_widget):
    foreign = ChatFactory(contact=ContactFactory(widget=other_widget), is_internal=True)
    assert_problem(api(scopes=["transcripts:read"]).get(url(foreign.pk)), 404, "not_found")


def test_post_is_405(api, chat):
    response = api(scopes=["transcripts:read"]).post(url(chat.pk), {}, format="json")
    assert_problem(response, 405, "method_not_allowed")


# --- the served application ----------------------------------------------------------------------
# The request runs on the WSGI adapter's own thread and database connection: these tests commit.
served = pytest.mark.django_db(transaction=True)


def call_asgi(path: str, token: str, disconnect_after_first_body: bool = False) -> tuple[dict, list[dict]]:
    """One GET through config.asgi.application (the served stack); returns the start message and
    the body messages."""
    from config.asgi import application

    scope = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(b"host", b"testserver"), (b"authorization", f"Bearer {token}".encode())],
        "client": ("127.0.0.1", 50000),
        "server": ("testserver", 80),
    }
    sent: list[dict] = []
    requested = False
    first_body = None

    async def receive():
        nonlocal requested
        if not requested:
            requested = True
            return {"type": "http.request", "body": b"", "more_body": False}
        if disconnect_after_first_body:
            await first_body.wait()
            return {"type": "http.disconnect"}
        await asyncio.Event().wait()  # no disconnect; Django cancels this listener when done

    async def send(message):
        sent.append(message)
        if message["type"] == "http.response.body" and message.get("body"):
            first_body.set()
            if disconnect_after_first_body:
                await asyncio.sleep(0.01)  # a slow client: the disconnect arrives meanwhile

    async def run():
        nonlocal first_body
        first_body = asyncio.Event()
        await application(scope, receive, send)

    async_to_sync(run)()
    return sent[0], sent[1:]


@served
def test_asgi_streams_pieces_as_they_are_produced(make_token, widget, chat, monkeypatch):
    add(chat, *({"body": f"{i:05d} " + "ж" * 2000} for i in range(300)))  # ~1.2 MB of UTF-8
    events: list[str] = []
    produce = transcript.export_transcript

    def traced(**kwargs):
        for piece in produce(**kwargs):
            events.append("produced")
            yield piece

    monkeypatch.setattr(transcript, "export_transcript", traced)
    sent_events: list[dict] = []

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        start, bodies = call_asgi(url(chat.pk), make_token(scopes=["transcripts:read"]))
    for message in bodies:
        if message.get("body"):
            sent_events.append(message)

    assert start["status"] == 200
    headers = {name.decode().lower(): value.decode() for name, value in start["headers"]}
    assert headers["content-type"] == "text/plain; charset=UTF-8"
    assert headers["content-disposition"] == f'attachment; filename="chat-{chat.pk}-transcript.txt"'
    assert "content-length" not in headers
    # Many body messages, all but the closing one announcing more.
    assert len(sent_events) > 10
    assert all(m.get("more_body") is True for m in sent_events)
    assert bodies[-1]["type"] == "http.response.body" and not bodies[-1].get("more_body", False)
    # Django never fell back to buffering a synchronous iterator.
    assert not [w for w in caught if "consume synchronous iterators" in str(w.message)]
    data = b"".join(m["body"] for m in sent_events)
    assert data.decode().count("\n[2024-05-02 ") == 300
    assert not data.startswith(b"\xef\xbb\xbf")
    assert events.count("produced") > 10


@served
def test_asgi_sends_before_the_transcript_is_complete(make_token, widget, chat, monkeypatch):
    add(chat, *({"body": "ю" * 4000} for i in range(200)))
    timeline: list[str] = []
    produce = transcript.export_transcript

    def traced(**kwargs):
        for piece in produce(**kwargs):
            timeline.append("produced")
            yield piece

    monkeypatch.setattr(transcript, "export_transcript", traced)

    from config import asgi

    async def recording(scope, receive, send):
        async def send_and_note(message):
            if message["type"] == "http.response.body" and message.get("body"):
                timeline.append("sent")
            await send(message)

        await django_app(scope, receive, send_and_note)

    django_app = asgi.application
    monkeypatch.setattr(asgi, "application", recording)
    call_asgi(url(chat.pk), make_token(scopes=["transcripts:read"]))

    # Streaming interleaves: the first bytes leave before the last piece is produced. Exactly when
    # they leave is the event loop's and the GIL's business (the adapter queues up to 10 messages
    # and the response buffer writes them on a task of its own), so the test asks for more pieces
    # than that queue holds and for nothing tighter than "before the last one".
    assert timeline.count("produced") > 20
    first_sent = timeline.index("sent")
    last_produced = len(timeline) - 1 - timeline[::-1].index("produced")
    assert first_sent < last_produced


@served
def test_asgi_errors_are_problems(make_token, other_widget):
    foreign = ChatFactory(contact=ContactFactory(widget=other_widget))
    start, bodies = call_asgi(url(foreign.pk), make_token(scopes=["transcripts:read"]))
    assert start["status"] == 404
    headers = {name.decode().lower(): value.decode() for name, value in start["headers"]}
    assert headers["content-type"].startswith("application/problem+json")


@served
def test_asgi_client_disconnect_stops_the_export(make_token, widget, chat, monkeypatch):
    add(chat, *({"body": "ы" * 4000} for i in range(600)))  # ~4.8 MB, about 74 pieces
    produced = []
    produce = transcript.export_transcript

    def traced(**kwargs):
        for piece in produce(**kwargs):
            produced.append(len(piece))
            yield piece

    monkeypatch.setattr(transcript, "export_transcript", traced)

    start, bodies = call_asgi(url(chat.pk), make_token(scopes=["transcripts:read"]), disconnect_after_first_body=True)

    # then the export stopped a few pieces after the client went (the adapter's send queue holds some)
    assert start["status"] == 200
    assert 1 <= len(produced) < 30
    assert Message.objects.filter(chat=chat).count() == 600
