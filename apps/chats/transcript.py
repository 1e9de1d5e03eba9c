"""Chat transcript export: a plain-text rendering of what the visitor could see, streamed.

Content is chosen by allowlist: only `public` messages are read, so private operator notes,
operator-only e-mail and operator-to-operator messages (and any visibility added later) never
appear. The output is UTF-8 without BOM, one header block then one entry per message:

    [YYYY-MM-DD HH:MM:SS] Author: first line of the body
      continuation lines indented by two spaces

Times are in settings.BUSINESS_TIME_ZONE. Because every continuation line is indented and control
characters are removed, a body can never forge a line that looks like another message.

Budgets (spec, Limits): at most MAX_MESSAGES messages, MAX_BYTES bytes of output and
MAX_BODY_CHARS characters per body. When a budget is reached the output stops after the last whole
message that fits and ends with TRUNCATION_MARKER, whose bytes are counted inside MAX_BYTES.

Memory stays constant: messages are read in keyset chunks of CHUNK_ROWS rows with the head of
their body, long bodies a few at a time (all cut by the database), and bytes leave in pieces of
about CHUNK_BYTES.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from datetime import datetime
from functools import lru_cache
from typing import Any, NamedTuple
from zoneinfo import ZoneInfo

from django.conf import settings
from django.db.models import CharField, F, Q, QuerySet, Subquery, TextField
from django.db.models.functions import Cast, Substr, TruncSecond

from apps.core.errors import AppError
from apps.core.models import Widget

from .models import Chat, Message

MAX_MESSAGES = 50_000
MAX_BYTES = 10 * 1024 * 1024
MAX_BODY_CHARS = 64 * 1024
MAX_FILENAME_CHARS = 255
CHUNK_ROWS = 1000  # messages per query, read with HEAD_CHARS of their body
HEAD_CHARS = 1024
LONG_BATCH = 16  # longer bodies per query; at most LONG_BATCH * MAX_BODY_CHARS characters held
CHUNK_BYTES = 64 * 1024
TRUNCATION_MARKER = "[Экспорт ограничен безопасным размером]"
CONTENT_TYPE = "text/plain; charset=UTF-8"

_MARKER_BYTES = (TRUNCATION_MARKER + "\n").encode()

# C0 and C1 controls, DEL, and the bidirectional embedding/override/isolate controls: a line's
# displayed text must be the text it holds. \t and \n are kept in bodies (handled separately).
_BIDI = r"\u202a-\u202e\u2066-\u2069"
_BODY_UNSAFE = re.compile(rf"[\x00-\x08\x0b-\x1f\x7f-\x9f{_BIDI}]")
_LINE_UNSAFE = re.compile(rf"[\x00-\x1f\x7f-\x9f{_BIDI}]")
# Characters that viewers render as a line break; inside a body they become real continuations.
_LINE_BREAKS = re.compile(r"\r\n|[\u2028\u2029]")
_BODY_SUSPECT = re.compile(rf"[\x00-\x08\x0b-\x1f\x7f-\x9f{_BIDI}\u2028\u2029]")


class InternalRoom(AppError):
    """Transcripts of internal department chats are not exported."""

    status, code, title = 403, "internal_room", "Internal department chat"


def transcript_filename(chat: Chat) -> str:
    return f"chat-{chat.pk}-transcript.txt"


def export_transcript(*, widget: Widget, chat: Chat) -> Iterator[bytes]:
    """The transcript of `chat` as UTF-8 byte pieces of about CHUNK_BYTES.

    Checks happen now (raises InternalRoom); the messages are read lazily, chunk by chunk, while
    the returned iterator is consumed, outside any transaction, by bounded queries.
    `chat` must be the widget's own (the caller resolved it inside the tenant).
    """
    assert chat.widget_id == widget.pk, "chat of another widget"
    if chat.is_internal:
        raise InternalRoom()
    return coalesce(transcript_blocks(chat=chat), size=CHUNK_BYTES)


def transcript_blocks(*, chat: Chat) -> Iterator[bytes]:
    """The header, then one block per message (its whole lines, each ending in \\n), then the
    marker if a budget was reached. The total never exceeds MAX_BYTES."""
    header = "".join(f"{line}\n" for line in _header_lines(chat)) + "\n"
    data = header.encode()
    used = len(data)
    yield data

    contact_name = _single_line(chat.contact.name) or "Visitor"
    # A message is sent at once while the marker would still fit after it. One that fits only
    # without the marker is held back: it is sent if the transcript ends within the budget, and
    # dropped for the marker if anything else follows. What is held back is at most that message
    # plus fewer bytes than the marker.
    held: list[bytes] = []
    held_size = 0
    rows = _public_messages(chat=chat, limit=MAX_MESSAGES + 1)
    for index, row in enumerate(rows):
        if index >= MAX_MESSAGES:
            break
        data = render_message(row, contact_name=contact_name).encode()
        if not held and used + len(data) + len(_MARKER_BYTES) <= MAX_BYTES:
            used += len(data)
            yield data
        elif used + held_size + len(data) <= MAX_BYTES:
            held.append(data)
            held_size += len(data)
        else:
            break
    else:
        yield from held
        return
    yield _MARKER_BYTES


def coalesce(blocks: Iterable[bytes], *, size: int) -> Iterator[bytes]:
    """Join small blocks into pieces of at least `size` bytes (the last one may be smaller)."""
    pending: list[bytes] = []
    length = 0
    for block in blocks:
        pending.append(block)
        length += len(block)
        if length >= size:
            yield b"".join(pending)
            pending, length = [], 0
    if pending:
        yield b"".join(pending)


def render_message(row: Row, *, contact_name: str) -> str:
    """One message as whole lines ending in \\n."""
    at = row.at
    author = contact_name if row.author_kind == Message.Author.CLIENT else _operator(row)
    text = _text(row)
    if "\n" in text:
        text = text.replace("\n", "\n  ")
    if text and text[0] != "\n":
        return f"[{at}] {author}: {text}\n"
    return f"[{at}] {author}:{text}\n"


def safe_filename(name: str | None) -> str:
    """The canonical name of an attachment: a basename without control characters, at most
    MAX_FILENAME_CHARS characters, `attachment` when nothing is left."""
    name = _LINE_UNSAFE.sub("", (name or "").replace("\\", "/"))
    name = name.rsplit("/", 1)[-1].strip()
    if name in ("", ".", ".."):
        return "attachment"
    return name[:MAX_FILENAME_CHARS]


# --- reading --------------------------------------------------------------------------------------


class Row(NamedTuple):
    """The columns a transcript line needs (read as plain values, no model instances)."""

    id: int
    at: str  # creation time in BUSINESS_TIME_ZONE, `YYYY-MM-DD HH:MM:SS`, formatted by the database
    type: str
    body: str  # cut by the database (to HEAD_CHARS + 1, then to MAX_BODY_CHARS)
    # JSON text (or None), decoded only by the message types that show it: read as text, a row has
    # no column with a converter, and 50 000 rows skip Django's per-row converter pass
    coords: str | None
    keyboard: str | None
    author_kind: str
    agent_name: str | None
    agent_surname: str | None
    file_name: str | None


_READ_AS = {"body": "body_head", "coords": "coords_json", "keyboard": "keyboard_json"}


def _chunk(chat: Chat, *, last_id: int | None, size: int) -> QuerySet:
    """One chunk of `chat`'s public messages as `Row` tuples: the first chunk, or the one after
    `last_id`; `size` rows (a whole chunk or the budget's rest), bodies cut to HEAD_CHARS + 1."""
    queryset = _public(chat.pk, chat.widget_id)
    if last_id is not None:
        # Keyset after the last row, whose created_at the database looks up (messages are never
        # deleted on their own). The redundant `>=` lets the index on (chat, created_at, id) start
        # the scan at the key; the OR alone walks the chat from its start.
        anchor = Subquery(Message.objects.filter(pk=last_id).values("created_at")[:1])
        queryset = queryset.filter(Q(created_at__gte=anchor) & (Q(created_at__gt=anchor) | Q(id__gt=last_id)))
    return (
        queryset.annotate(
            at=Cast(TruncSecond("created_at", tzinfo=_business_zone()), output_field=CharField()),
            body_head=Substr("body", 1, HEAD_CHARS + 1),
            agent_name=F("agent__name"),
            agent_surname=F("agent__surname"),
            file_name=F("file__original_name"),
            coords_json=Cast("coords", TextField()),
            keyboard_json=Cast("keyboard", TextField()),
        )
        .order_by("created_at", "id")
        .values_list(*(_READ_AS.get(c, c) for c in Row._fields))[:size]
    )


def _public_messages(*, chat: Chat, limit: int) -> Iterator[Row]:
    """Public messages of `chat` in (created_at, id) order, read by keyset in CHUNK_ROWS chunks.

    Each chunk carries only the first HEAD_CHARS (+1) characters of every body; the bodies longer
    than that are fetched LONG_BATCH at a time, cut to MAX_BODY_CHARS, when their turn comes. So at
    most CHUNK_ROWS heads and LONG_BATCH bodies are in memory, whatever the chat holds. Times come
    formatted from the database (parsing 50 000 timestamps in Python costs more than the query).

    Repeated bounded queries rather than one cursor: nothing stays open while a slow client
    downloads (an open SQLite read pins the WAL; a PostgreSQL WITH HOLD cursor would materialise
    the whole result on the server), and an abandoned download holds nothing.
    """
    read = 0
    last_id = None
    while read < limit:
        size = min(CHUNK_ROWS, limit - read)
        rows = [Row._make(values) for values in _chunk(chat, last_id=last_id, size=size)]
        yield from _with_full_bodies(chat, rows)
        read += len(rows)
        if len(rows) < size:
            return
        last_id = rows[-1].id


def _with_full_bodies(chat: Chat, rows: list[Row]) -> Iterator[Row]:
    long_ids = [row.id for row in rows if len(row.body) > HEAD_CHARS]
    if not long_ids:
        yield from rows
        return
    bodies: dict[int, str] = {}
    seen = fetched = 0  # long rows met so far; long rows covered by the batches read so far
    for row in rows:
        if len(row.body) <= HEAD_CHARS:
            yield row
            continue
        if seen == fetched:
            batch = long_ids[fetched : fetched + LONG_BATCH]
            bodies = full_bodies(chat=chat, ids=batch)
            fetched += len(batch)
        seen += 1
        body = bodies.pop(row.id, None)
        if body is not None:  # None: deleted or no longer public since the chunk was read
            yield row._replace(body=body)


def full_bodies(*, chat: Chat, ids: list[int]) -> dict[int, str]:
    """{id: body cut to MAX_BODY_CHARS} of those `ids` that are still public messages of `chat`."""
    queryset = _public(chat.pk, chat.widget_id).filter(id__in=ids).annotate(body_cut=Substr("body", 1, MAX_BODY_CHARS))
    return dict(queryset.values_list("id", "body_cut"))


def _public(chat_id, widget_id):
    # The allowlist: every read of message content goes through this filter.
    return Message.objects.filter(chat_id=chat_id, widget_id=widget_id, visibility=Message.Visibility.PUBLIC)


# --- rendering ------------------------------------------------------------------------------------


@lru_cache(maxsize=1)
def _business_zone() -> ZoneInfo:
    return ZoneInfo(settings.BUSINESS_TIME_ZONE)


def _header_lines(chat: Chat) -> list[str]:
    contact = chat.contact
    created = _local(chat.created_at)
    return [
        f"Chat: {chat.pk}",
        f"Channel: {_single_line(chat.channel)}",
        f"Contact: {_single_line(contact.name) or 'Visitor'} ({contact.guid})",
        f"Created: {created} ({settings.BUSINESS_TIME_ZONE})",
    ]


def _local(moment: datetime) -> str:
    return moment.astimezone(_business_zone()).isoformat(" ", "seconds")[:19]


def _operator(row: Row) -> str:
    return _author_name(row.author_kind, row.agent_name, row.agent_surname)


@lru_cache(maxsize=256)
def _author_name(kind: str, name: str | None, surname: str | None) -> str:
    if kind in (Message.Author.AGENT, Message.Author.AI):
        return _single_line(f"{name or ''} {surname or ''}") or ("AI" if kind == Message.Author.AI else "Agent")
    return "System"


def _text(row: Row) -> str:
    body = _clean_body(row.body)
    kind = row.type
    if kind in (Message.Type.FILE, Message.Type.IMAGE):
        return _with_caption(f"[file: {safe_filename(row.file_name)}]", body)
    if kind == Message.Type.LOCATION:
        return _with_caption(_location(row.coords), body)
    if kind == Message.Type.STICKER:
        return _with_caption("[sticker]", body)
    if kind == Message.Type.KEYBOARD:
        return "\n".join([body, *_buttons(row.keyboard)])
    return body


def _with_caption(token: str, body: str) -> str:
    return f"{token} {body}" if body else token


def _decoded(text: str | None) -> Any:
    return json.loads(text) if text else None


def _location(coords_json: str | None) -> str:
    coords = _decoded(coords_json)
    if isinstance(coords, dict):
        lat = coords.get("latitude", coords.get("lat"))
        lon = coords.get("longitude", coords.get("lon", coords.get("lng")))
        if _is_number(lat) and _is_number(lon):
            return f"[location: {lat}, {lon}]"
    return "[location]"


def _is_number(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _buttons(keyboard_json: str | None) -> list[str]:
    keyboard = _decoded(keyboard_json)
    buttons = keyboard.get("buttons") if isinstance(keyboard, dict) else None
    if not isinstance(buttons, list):
        return []
    lines = []
    for button in buttons:
        if not isinstance(button, dict):
            continue
        label = _single_line(str(button.get("label") or ""))
        url = _single_line(str(button.get("url") or ""))
        lines.append(f"{label}: {url}" if url else label)
    return lines


def _clean_body(text: str) -> str:
    if _BODY_SUSPECT.search(text) is not None:
        text = _BODY_UNSAFE.sub("", _LINE_BREAKS.sub("\n", text))
    return text.strip("\n")


def _single_line(text: str) -> str:
    return " ".join(_LINE_UNSAFE.sub(" ", _LINE_BREAKS.sub(" ", text or "")).split())
