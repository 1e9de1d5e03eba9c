"""Conversations exported row by row (GET /v1/chats/export): one row per chat created in a window,
as CSV or JSON Lines.

Rows are read from the chat facts alone (apps.stats.models.ChatFacts: one row per chat with its
channel, creation, closing, contact, department, attribution, escalations, first response, counted
messages and latest rating), in keyset pages of PAGE_SIZE ordered by (created_at, chat id) on the
facts' (widget, created_at, chat) index, each contact's tags a subquery on their (contact, name)
index: one statement a page. Memory stays one page whatever the window's size. Chats whose contact
is under erasure are left out, as every read of chats does.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Iterator
from datetime import datetime

import orjson
from django.db.models import (
    Aggregate,
    CharField,
    DurationField,
    ExpressionWrapper,
    F,
    OuterRef,
    Q,
    Subquery,
    TextField,
    Value,
)
from django.db.models.functions import Cast

from apps.chats.models import ContactTag
from apps.erasure.selectors import not_erasing

from .models import ChatFacts
from .windows import Window

COLUMNS = (
    "id",
    "channel",
    "created_at",
    "closed_at",
    "contact_id",
    "department_id",
    "first_response_seconds",
    "duration_seconds",
    "messages",
    "accepted_by_type",
    "handled_by_type",
    "ai_to_human",
    "human_to_ai",
    "rating",
    "tags",
)
FORMATS = ("csv", "jsonl")
MAX_WINDOW_DAYS = 366
CONTENT_TYPES = {"csv": "text/csv; charset=utf-8", "jsonl": "application/x-ndjson; charset=utf-8"}
PAGE_SIZE = 2000

# Tag names never hold control characters (apps.chats.api.contacts.TagNameField).
_TAG_SEPARATOR = "\x1f"


class _TagNames(Aggregate):
    """The names joined by _TAG_SEPARATOR, in no set order: STRING_AGG, GROUP_CONCAT on SQLite."""

    function = "STRING_AGG"
    output_field = TextField()

    def __init__(self, expression, **extra):
        super().__init__(expression, Value(_TAG_SEPARATOR), **extra)

    def as_sqlite(self, compiler, connection, **extra_context):
        return self.as_sql(compiler, connection, function="GROUP_CONCAT", **extra_context)


# What one chat's row is read from, in the order export_pages unpacks it. The timestamps come as
# the database's text (see _iso) and the duration as the database's difference of the two.
_READ = (
    F("chat_id"),
    F("channel"),
    Cast("created_at", CharField()),
    Cast("closed_at", CharField()),
    F("contact_id"),
    F("department_id"),
    F("first_response_ms"),
    ExpressionWrapper(F("closed_at") - F("created_at"), output_field=DurationField()),
    F("messages"),
    F("accepted_type"),
    F("handled_type"),
    F("went_ai_to_human"),
    F("went_human_to_ai"),
    F("rating"),
    Subquery(
        ContactTag.objects.filter(contact_id=OuterRef("contact_id"))
        .order_by()
        .values("contact_id")
        .annotate(names=_TagNames("name"))
        .values("names")
    ),
)


def _facts(widget_id: int, window: Window):
    """The window's facts, oldest first, as tuples in _READ's order: a range of the facts'
    (widget, created_at, chat) index; no chat or message row is read."""
    return (
        ChatFacts.objects.filter(widget_id=widget_id, created_at__gte=window.start, created_at__lt=window.end)
        .filter(not_erasing("contact_id"))
        .order_by("created_at", "chat_id")
        .values_list(*_READ)
    )


def _iso(text: str) -> str:
    """A UTC timestamp as the database spells it in text (PostgreSQL `2025-01-15 06:00:00.5+00` in the
    connection's UTC, SQLite `2025-01-15 06:00:00.500000`) in the ISO 8601 of `datetime.isoformat()`
    (`2025-01-15T06:00:00.500000+00:00`). Django loads a PostgreSQL timestamptz through a Python
    subclass of psycopg's loader, the largest cost of a row; text loads in C."""
    fraction = text[19:].removesuffix("+00")
    return f"{text[:10]}T{text[11:19]}{fraction.ljust(7, '0') if fraction else ''}+00:00"


def export_pages(*, widget_id: int, window: Window) -> Iterator[list[tuple]]:
    """Keyset pages of _facts, oldest first: one statement each, its contacts' tags included."""
    facts = _facts(widget_id, window)
    after: Q | None = None
    while True:
        page = list((facts.filter(after) if after is not None else facts)[:PAGE_SIZE])
        if not page:
            return
        yield page
        if len(page) < PAGE_SIZE:
            return
        last = datetime.fromisoformat(_iso(page[-1][2]))
        # `created_at >= last` on its own starts the next page's index range at the last row.
        after = Q(created_at__gte=last) & (Q(created_at__gt=last) | Q(chat_id__gt=page[-1][0]))


def rows(page: list[tuple], *, text: bool = False) -> Iterator[tuple]:
    """The COLUMNS' values of a page's rows (as export_pages yields them). `text`: as CSV spells
    them (booleans `true`/`false`, tags joined by `,`; csv writes None as an empty cell)."""
    spell = _TEXT if text else _SAME
    for (
        chat_id,
        channel,
        created_at,
        closed_at,
        contact_id,
        department_id,
        first_response_ms,
        duration,
        messages,
        accepted_type,
        handled_type,
        ai_to_human,
        human_to_ai,
        rating,
        tags,
    ) in page:
        names = sorted(tags.split(_TAG_SEPARATOR)) if tags else []
        yield (
            chat_id,
            channel,
            _iso(created_at),
            None if closed_at is None else _iso(closed_at),
            contact_id,
            department_id,
            None if first_response_ms is None else first_response_ms / 1000,
            None if duration is None else duration.days * 86400 + duration.seconds,
            messages,
            accepted_type or None,
            handled_type or None,
            spell[ai_to_human],
            spell[human_to_ai],
            rating,
            ",".join(names) if text else names,
        )


_TEXT = {True: "true", False: "false"}
_SAME = {True: True, False: False}


def render(pages: Iterable[list[tuple]], fmt: str) -> Iterator[bytes]:
    """The export's body in `fmt`, one piece per page: CSV with a header row, or one JSON object per
    line (orjson: the standard library's encoder costs more than the rest of a row)."""
    if fmt == "csv":
        yield _csv([COLUMNS])
        for page in pages:
            yield _csv(rows(page, text=True))
        return
    for page in pages:
        yield b"".join([orjson.dumps(dict(zip(COLUMNS, row, strict=True)), option=_LINE) for row in rows(page)])


_LINE = orjson.OPT_APPEND_NEWLINE


def _csv(rows) -> bytes:
    out = io.StringIO()
    csv.writer(out, lineterminator="\r\n").writerows(rows)
    return out.getvalue().encode()


def filename(window: Window, fmt: str) -> str:
    def day(moment: datetime) -> str:
        return moment.strftime("%Y%m%dT%H%M")

    return f"chats-{day(window.start)}-{day(window.end)}.{fmt}"
