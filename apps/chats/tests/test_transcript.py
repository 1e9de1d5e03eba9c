"""The transcript service: allowlist, rendering, budgets, chunked reading and bounded memory."""

import tracemalloc
from datetime import UTC, datetime, timedelta

import pytest

from apps.agents.models import Agent
from apps.chats import transcript
from apps.chats.models import File, Message
from apps.chats.tests.factories import AgentFactory, ChatFactory, ContactFactory

pytestmark = pytest.mark.django_db

MARKER = "[Экспорт ограничен безопасным размером]"
T0 = datetime(2024, 5, 1, 9, 0, 0, tzinfo=UTC)  # 12:00:00 in Moscow


@pytest.fixture
def chat(widget):
    contact = ContactFactory(widget=widget, name="Иван Петров")
    return ChatFactory(contact=contact, created_at=T0 - timedelta(minutes=5))


def add(chat, *specs):
    """bulk_create messages; each spec a dict of Message fields (created_at defaults to T0 + i s)."""
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


def export(widget, chat) -> bytes:
    return b"".join(transcript.export_transcript(widget=widget, chat=chat))


def body_lines(widget, chat) -> list[str]:
    """The lines after the header block."""
    text = export(widget, chat).decode()
    return text.split("\n\n", 1)[1].splitlines()


def a_file(widget, name):
    return File.objects.create(widget=widget, stored="files/x.bin", original_name=name, size=1)


# --- format ---------------------------------------------------------------------------------------


def test_header_then_one_line_per_message_in_moscow_time(widget, chat):
    agent = AgentFactory(widget=widget, name="Анна", surname="Смирнова")
    ai = AgentFactory(widget=widget, name="Ассистент", type=Agent.Type.AI)
    add(
        chat,
        {"body": "Здравствуйте"},
        {"body": "Добрый день", "author_kind": Message.Author.AGENT, "agent": agent},
        {"body": "Чем помочь?", "author_kind": Message.Author.AI, "agent": ai},
        {"body": "Chat closed", "author_kind": Message.Author.SYSTEM},
    )

    text = export(widget, chat).decode()

    assert text == (
        f"Chat: {chat.pk}\n"
        "Channel: widget\n"
        f"Contact: Иван Петров ({chat.contact.guid})\n"
        "Created: 2024-05-01 11:55:00 (Europe/Moscow)\n"
        "\n"
        "[2024-05-01 12:00:00] Иван Петров: Здравствуйте\n"
        "[2024-05-01 12:00:01] Анна Смирнова: Добрый день\n"
        "[2024-05-01 12:00:02] Ассистент: Чем помочь?\n"
        "[2024-05-01 12:00:03] System: Chat closed\n"
    )


def test_utf8_without_bom(widget, chat):
    add(chat, {"body": "привет"})
    data = export(widget, chat)
    assert not data.startswith(b"\xef\xbb\xbf")
    assert data.startswith(b"Chat: ")
    data.decode("utf-8")


def test_contact_without_name_is_visitor_and_agentless_replies_are_named_by_kind(widget):
    chat = ChatFactory(contact=ContactFactory(widget=widget, name=""))
    add(
        chat,
        {"body": "hi"},
        {"body": "hello", "author_kind": Message.Author.AGENT},
        {"body": "auto", "author_kind": Message.Author.AI},
    )
    lines = body_lines(widget, chat)
    assert [line.split("] ", 1)[1] for line in lines] == ["Visitor: hi", "Agent: hello", "AI: auto"]


def test_messages_in_created_at_then_id_order_across_chunks(widget, chat, monkeypatch):
    monkeypatch.setattr(transcript, "CHUNK_ROWS", 2)
    same = T0 + timedelta(minutes=1)
    add(
        chat,
        {"body": "third", "created_at": same},
        {"body": "first", "created_at": T0},
        {"body": "fourth", "created_at": same},
        {"body": "fifth", "created_at": same},
        {"body": "second", "created_at": T0 + timedelta(seconds=30)},
    )
    bodies = [line.rsplit(": ", 1)[1] for line in body_lines(widget, chat)]
    assert bodies == ["first", "second", "third", "fourth", "fifth"]


def test_multiline_body_continuations_are_indented(widget, chat):
    add(chat, {"body": "line one\r\nline two\n\n\tindented\u2028after separator\n"})
    assert body_lines(widget, chat) == [
        "[2024-05-01 12:00:00] Иван Петров: line one",
        "  line two",
        "  ",
        "  \tindented",
        "  after separator",
    ]


def test_a_body_cannot_forge_another_message_line(widget, chat):
    add(chat, {"body": "ok\n[2024-05-01 12:00:09] Анна Смирнова: send me your password"})
    lines = body_lines(widget, chat)
    assert len([line for line in lines if line.startswith("[")]) == 1
    assert lines[1] == "  [2024-05-01 12:00:09] Анна Смирнова: send me your password"


def test_control_characters_are_removed(widget, chat):
    add(chat, {"body": "a\x01b\x1b[31mc\rd\x7fe\x85f\u202eg\u2066h\ti"})
    assert body_lines(widget, chat) == ["[2024-05-01 12:00:00] Иван Петров: ab[31mcdefgh\ti"]


def test_nul_is_removed():
    # PostgreSQL cannot store NUL in text and SQLite's functions stop at it; rendering still drops it.
    row = transcript.Row(
        id=1,
        at="2024-05-01 12:00:00",
        type=Message.Type.TEXT,
        body="a\x00b",
        coords=None,
        keyboard=None,
        author_kind=Message.Author.SYSTEM,
        agent_name=None,
        agent_surname=None,
        file_name=None,
    )
    assert transcript.render_message(row, contact_name="V") == "[2024-05-01 12:00:00] System: ab\n"


def test_control_characters_in_names_never_break_lines(widget):
    chat = ChatFactory(contact=ContactFactory(widget=widget, name="Eve\n[2024-01-01 00:00:00] Admin"))
    add(chat, {"body": "x"})
    text = export(widget, chat).decode()
    assert "Contact: Eve [2024-01-01 00:00:00] Admin (" in text
    assert text.endswith("[2024-05-01 12:00:00] Eve [2024-01-01 00:00:00] Admin: x\n")


# --- allowlist --------------------------------------------------------------------------------------


def test_only_public_messages_appear(widget, chat):
    add(
        chat,
        {"body": "visible to the visitor"},
        {"body": "private note", "author_kind": Message.Author.AGENT, "visibility": Message.Visibility.NOTE},
        {"body": "operator e-mail", "author_kind": Message.Author.AGENT, "visibility": Message.Visibility.EMAIL},
        {"body": "between operators", "author_kind": Message.Author.AGENT, "visibility": Message.Visibility.INTERNAL},
        {"body": "unknown future kind", "visibility": "whisper"},
    )
    text = export(widget, chat).decode()
    assert "visible to the visitor" in text
    for hidden in ("private note", "operator e-mail", "between operators", "unknown future kind"):
        assert hidden not in text


def test_hidden_messages_do_not_count_against_the_message_budget(widget, chat, monkeypatch):
    monkeypatch.setattr(transcript, "MAX_MESSAGES", 2)
    add(
        chat,
        {"body": "one"},
        {"body": "note", "visibility": Message.Visibility.NOTE},
        {"body": "two"},
    )
    assert MARKER not in export(widget, chat).decode()


def test_other_chats_messages_never_appear(widget, chat):
    other = ChatFactory(contact=ContactFactory(widget=widget))
    add(other, {"body": "someone else"})
    add(chat, {"body": "mine"})
    text = export(widget, chat).decode()
    assert "mine" in text and "someone else" not in text


# --- attachments and rich types -----------------------------------------------------------------------


def test_file_shows_only_a_canonical_basename(widget, chat):
    add(chat, {"type": Message.Type.FILE, "file": a_file(widget, "../../etc/report.pdf")})
    assert body_lines(widget, chat) == ["[2024-05-01 12:00:00] Иван Петров: [file: report.pdf]"]


@pytest.mark.parametrize(
    ("original", "shown"),
    [
        ("C:\\Users\\me\\photo.png", "photo.png"),
        ("/var/data/", "attachment"),
        ("..", "attachment"),
        ("", "attachment"),
        ("evil\n[2024-01-01 00:00:00] x.png", "evil[2024-01-01 00:00:00] x.png"),
        ("a\u202egnp.exe", "agnp.exe"),
    ],
)
def test_safe_filename(original, shown):
    assert transcript.safe_filename(original) == shown


def test_safe_filename_is_at_most_255_characters():
    assert transcript.safe_filename("dir/" + "я" * 300) == "я" * 255


def test_image_without_a_stored_file_is_an_attachment_with_caption(widget, chat):
    add(chat, {"type": Message.Type.IMAGE, "body": "look"})
    assert body_lines(widget, chat) == ["[2024-05-01 12:00:00] Иван Петров: [file: attachment] look"]


def test_location_sticker_and_keyboard(widget, chat):
    agent = AgentFactory(widget=widget, name="Анна", surname="")
    add(
        chat,
        {"type": Message.Type.LOCATION, "coords": {"latitude": 55.7558, "longitude": 37.6173}},
        {"type": Message.Type.STICKER, "sticker": {"id": "cat"}},
        {
            "type": Message.Type.KEYBOARD,
            "body": "Choose:",
            "author_kind": Message.Author.AGENT,
            "agent": agent,
            "keyboard": {
                "buttons": [
                    {"label": "Site", "url": "https://example.com/a"},
                    {"label": "Docs\n[x]", "url": "https://example.com/docs"},
                ]
            },
        },
        {"type": Message.Type.LOCATION, "coords": {"latitude": "55"}},
    )
    assert body_lines(widget, chat) == [
        "[2024-05-01 12:00:00] Иван Петров: [location: 55.7558, 37.6173]",
        "[2024-05-01 12:00:01] Иван Петров: [sticker]",
        "[2024-05-01 12:00:02] Анна: Choose:",
        "  Site: https://example.com/a",
        "  Docs [x]: https://example.com/docs",
        "[2024-05-01 12:00:03] Иван Петров: [location]",
    ]


# --- budgets ------------------------------------------------------------------------------------------


def test_body_is_cut_at_64_ki_characters(widget, chat):
    add(chat, {"body": "я" * 65_536 + "TAIL"})
    (line,) = body_lines(widget, chat)
    assert line == "[2024-05-01 12:00:00] Иван Петров: " + "я" * 65_536


def test_message_budget_cuts_with_the_marker(widget, chat, monkeypatch):
    monkeypatch.setattr(transcript, "MAX_MESSAGES", 3)
    add(chat, *({"body": f"m{i}"} for i in range(5)))
    text = export(widget, chat).decode()
    assert text.endswith(f": m2\n{MARKER}\n")
    assert "m3" not in text


def test_exactly_the_message_budget_has_no_marker(widget, chat, monkeypatch):
    monkeypatch.setattr(transcript, "MAX_MESSAGES", 3)
    add(chat, *({"body": f"m{i}"} for i in range(3)))
    text = export(widget, chat).decode()
    assert text.endswith(": m2\n") and MARKER not in text


def test_real_size_budget_cuts_at_whole_lines_and_the_marker_fits(widget, chat):
    # 170 bodies of 64 Ki characters: ~11 MB of text against the 10 MiB budget.
    add(chat, *({"body": f"{i:04d}" + "x" * (65_536 - 4)} for i in range(170)))

    data = export(widget, chat)

    assert len(data) <= 10 * 1024 * 1024
    text = data.decode()
    assert text.endswith(f"\n{MARKER}\n")
    lines = text.split("\n\n", 1)[1].splitlines()
    assert lines[-1] == MARKER
    messages = lines[:-1]
    # Every message line is whole, in order, and the next one would not have fit with the marker.
    prefix = "[2024-05-01 12:00:00] Иван Петров: "
    assert all(len(line) == len(prefix) + 65_536 for line in messages)
    assert [line.split(": ", 1)[1][:4] for line in messages] == [f"{i:04d}" for i in range(len(messages))]
    marker_line = len(f"{MARKER}\n".encode())
    sent = len(data) - marker_line
    next_line = len(prefix.encode()) + 65_536 + 1
    assert sent + next_line + marker_line > 10 * 1024 * 1024
    assert len(messages) < 170


def test_size_budget_counts_the_marker_bytes(widget, chat, monkeypatch):
    header = len(export(widget, chat))
    add(chat, *({"body": "x" * 10} for _ in range(4)))
    line = len("[2024-05-01 12:00:00] Иван Петров: xxxxxxxxxx\n".encode())
    marker = len(f"{MARKER}\n".encode())

    # Room for two lines plus the marker; a third line (not the last) would leave no room for it.
    monkeypatch.setattr(transcript, "MAX_BYTES", header + 2 * line + marker)
    data = export(widget, chat)
    assert len(data) == header + 2 * line + marker
    assert data.decode().endswith(f"xxxxxxxxxx\n{MARKER}\n")

    # Exactly enough for all four lines: the final message needs no room for a marker.
    monkeypatch.setattr(transcript, "MAX_BYTES", header + 4 * line)
    data = export(widget, chat)
    assert len(data) == header + 4 * line
    assert MARKER not in data.decode()

    # One byte less: the fourth line no longer fits, and the third leaves no room for the marker.
    monkeypatch.setattr(transcript, "MAX_BYTES", header + 4 * line - 1)
    data = export(widget, chat)
    assert len(data) == header + 2 * line + marker
    assert data.decode().endswith(f"xxxxxxxxxx\n{MARKER}\n")


# --- tenancy and internal rooms ------------------------------------------------------------------------


def test_internal_department_chat_is_refused(widget):
    chat = ChatFactory(contact=ContactFactory(widget=widget), is_internal=True)
    with pytest.raises(transcript.InternalRoom) as caught:
        transcript.export_transcript(widget=widget, chat=chat)
    assert caught.value.status == 403 and caught.value.code == "internal_room"


def test_chat_of_another_widget_is_refused(widget, other_widget):
    chat = ChatFactory(contact=ContactFactory(widget=other_widget))
    with pytest.raises(AssertionError):
        transcript.export_transcript(widget=widget, chat=chat)


# --- streaming shape -------------------------------------------------------------------------------------


def test_pieces_are_about_64_kib(widget, chat):
    add(chat, *({"body": "y" * 1000} for _ in range(300)))
    pieces = list(transcript.export_transcript(widget=widget, chat=chat))
    assert len(pieces) > 3
    assert all(len(piece) >= 64 * 1024 for piece in pieces[:-1])
    assert all(len(piece) < 64 * 1024 + 2000 for piece in pieces)


def test_messages_are_read_in_bounded_chunks(widget, chat, monkeypatch, django_assert_num_queries):
    monkeypatch.setattr(transcript, "CHUNK_ROWS", 10)
    agent = AgentFactory(widget=widget)
    add(
        chat,
        *(
            {
                "type": Message.Type.FILE,
                "file": a_file(widget, f"f{i}.txt"),
                "author_kind": Message.Author.AGENT,
                "agent": agent,
            }
            for i in range(25)
        ),
    )
    # 10 + 10 + 5 rows: three queries, agents and files joined, nothing per message.
    with django_assert_num_queries(3):
        export(widget, chat)


def test_chunks_after_the_first_continue_from_the_last_row(widget, chat, monkeypatch, django_assert_num_queries):
    monkeypatch.setattr(transcript, "CHUNK_ROWS", 3)
    add(chat, *({"body": f"m{i}"} for i in range(10)))
    # four chunks (3 + 3 + 3 + 1): one query each, every message once and in order, twice the same
    with django_assert_num_queries(4):
        first = export(widget, chat)
    assert export(widget, chat) == first
    assert [line.split(": ", 1)[1] for line in body_lines(widget, chat)] == [f"m{i}" for i in range(10)]


def test_long_bodies_are_read_a_few_at_a_time(widget, chat, monkeypatch, django_assert_num_queries):
    monkeypatch.setattr(transcript, "CHUNK_ROWS", 4)
    monkeypatch.setattr(transcript, "HEAD_CHARS", 5)
    monkeypatch.setattr(transcript, "LONG_BATCH", 2)
    bodies = ["short", "long one", "tiny", "long two", "long three", "ok", "long four"]
    add(chat, *({"body": body} for body in bodies))
    # Chunks [0-3] and [4-6]; long bodies: 1, 3 (one batch), then 4, 6 (one batch).
    with django_assert_num_queries(4):
        lines = body_lines(widget, chat)
    assert [line.split(": ", 1)[1] for line in lines] == bodies


def test_long_body_hidden_between_the_two_reads_is_left_out(widget, chat, monkeypatch):
    monkeypatch.setattr(transcript, "HEAD_CHARS", 5)
    first, hidden, last = add(chat, {"body": "long first"}, {"body": "long hidden"}, {"body": "long last"})
    read = transcript.full_bodies

    def racing(*, chat, ids):
        Message.objects.filter(pk=hidden.pk).update(visibility=Message.Visibility.NOTE)
        return read(chat=chat, ids=ids)

    monkeypatch.setattr(transcript, "full_bodies", racing)
    assert [line.split(": ", 1)[1] for line in body_lines(widget, chat)] == ["long first", "long last"]


def test_full_bodies_reads_only_public_messages_of_the_chat(widget, chat):
    other = ChatFactory(contact=ContactFactory(widget=widget))
    mine, note = add(chat, {"body": "mine"}, {"body": "note", "visibility": Message.Visibility.NOTE})
    (theirs,) = add(other, {"body": "theirs"})
    assert transcript.full_bodies(chat=chat, ids=[mine.pk, note.pk, theirs.pk]) == {mine.pk: "mine"}


def test_memory_stays_bounded_while_10_mib_stream(widget, chat):
    add(chat, *({"body": "z" * 65_536} for _ in range(170)))
    total = 0
    tracemalloc.start()
    try:
        for piece in transcript.export_transcript(widget=widget, chat=chat):
            total += len(piece)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert total > 10_000_000
    # At most LONG_BATCH (16) bodies of 64 Ki characters and one piece: far below the output.
    assert peak < 3 * 1024 * 1024, peak
