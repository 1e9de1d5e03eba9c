"""Conversations exported row by row (GET /v1/chats/export): one row per chat created in a window,
as CSV or JSON Lines.

Rows are read from the chat facts alone (apps.stats.models.ChatFacts: one row per chat with its
channel, creation, closing, contact (and its guid, the contact's one public id), department,
attribution, escalations, first response, counted messages and latest rating), in keyset pages of
PAGE_SIZE ordered by (created_at, chat id) on the facts' (widget, created_at, chat) index, each
contact's tags a subquery on their (contact, name) index, who assigned the chat (its routing row) and
whether an SLA clock of it was breached (its clocks) and its labels subqueries on those rows' chat keys: one
statement a page. While a page is
spelled and sent, a thread reads the next (read_ahead), so memory stays a few pages whatever the
window's size. Chats whose contact is under erasure are left out, as every read of chats does.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterable, Iterator
from datetime import datetime

import orjson
from django.db import connection, connections
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
from django.db.models.lookups import IsNull

from apps.chats.models import ChatLabel, ContactTag
from apps.core import exports
from apps.core.ratelimit import Slot, Slots, SlotStoreUnavailable  # noqa: F401 - the store failure, named here for callers
from apps.routing.models import ChatRouting, SlaClock

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
    "assigned_by",
    "sla_breached",
    "labels",
)
FORMATS = ("csv", "jsonl")
MAX_WINDOW_DAYS = 366
# At most this many exports of one widget are in flight at once, across the web processes
# (apps.core.exports): each holds a web thread and two database connections while it is produced (a
# year of a large widget takes many seconds) and waits for its client after, so without a cap one
# widget's exports could take every thread and connection of the web tier. The ttl frees the slot of
# a process that died meanwhile.
IN_FLIGHT = Slots("chat-export", 2, ttl=3600)
RETRY_AFTER_SECONDS = 10


def admit(widget_id: int) -> Slot:
    """One of the widget's export slots: 429 rate_limited while IN_FLIGHT.count exports of the widget
    are in flight, 503 service_unavailable when the slot store does not answer (nothing is started)."""
    return exports.admit(IN_FLIGHT, widget_id, retry_after=RETRY_AFTER_SECONDS)


def holding(chunks: Iterator[bytes], slot: Slot, request) -> exports.Holding:
    """The export's body, holding `slot` until its client has it all or has gone."""
    return exports.Holding(chunks, slots=IN_FLIGHT, slot=slot, request=request)


CONTENT_TYPES = {"csv": "text/csv; charset=utf-8", "jsonl": "application/x-ndjson; charset=utf-8"}
PAGE_SIZE = 2000

# Tag and label names never hold control characters (apps.chats.contact_input.TagNameField, the
# labels' LabelNameField).
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
    F("contact_guid"),
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
    # Routing's own rows, by their chat keys: the routing row's primary key and the clocks' (chat,
    # kind) index, so the page stays one statement. The breach is a scalar subquery, not EXISTS:
    # PostgreSQL may run an EXISTS as one hash of every breached clock of every widget, built for
    # each page when it expects the window's many rows, where a scalar subquery is always probed
    # chat by chat on the index.
    Subquery(ChatRouting.objects.filter(chat_id=OuterRef("chat_id")).values("assigned_by")[:1]),
    IsNull(
        Subquery(SlaClock.objects.filter(chat_id=OuterRef("chat_id"), breached_at__isnull=False).values("pk")[:1]),
        False,
    ),
    # The chat's labels, on their (chat, label) key.
    Subquery(
        ChatLabel.objects.filter(chat_id=OuterRef("chat_id"))
        .order_by()
        .values("chat_id")
        .annotate(names=_TagNames("label__name"))
        .values("names")
    ),
)


def _facts(widget_id: int, window: Window):
    """The window's facts, oldest first, as tuples in _READ's order: a range of the facts'
    (widget, created_at, chat) index; no chat or message row is read."""
    return (
        ChatFacts.objects.filter(widget_id=widget_id, created_at__gte=window.start, created_at__lt=window.end)
        .live()
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


_END = object()


def read_ahead(pages: Iterator[list[tuple]]) -> Iterator[list[tuple]]:
    """`pages`, each after the first read by a thread of its own while the one before is spelled and
    sent, so the database's work on a page overlaps Python's on the last: at most two pages wait in
    memory. The first page is read here, so a window of one page never starts a thread. Inside a
    transaction every page is read here: rows it wrote are visible on its own connection only.

    The thread reads through a connection of its own and closes it when it ends: at the last page,
    on an error (raised here in turn), or within a moment of this generator being closed (the client
    went away)."""
    first = next(pages, None)
    if first is None:
        return
    if len(first) < PAGE_SIZE or connection.in_atomic_block:
        yield first
        yield from pages
        return
    handoff: queue.Queue = queue.Queue(maxsize=1)
    stop = threading.Event()

    def offer(item) -> bool:
        while not stop.is_set():
            try:
                handoff.put(item, timeout=0.25)
                return True
            except queue.Full:
                continue
        return False

    def read() -> None:
        try:
            for page in pages:
                if not offer(page):
                    return
            offer(_END)
        except Exception as error:  # handed to the response's thread, which raises it
            offer(error)
        finally:
            pages.close()
            connections.close_all()

    threading.Thread(target=read, name="export-read-ahead", daemon=True).start()
    try:
        yield first
        while (item := handoff.get()) is not _END:
            if isinstance(item, Exception):
                raise item
            yield item
    finally:
        stop.set()


def _tag_names(tags: str | None) -> list[str]:
    return sorted(tags.split(_TAG_SEPARATOR)) if tags else []


def _label_names(labels: str | None) -> list[str]:
    """Sorted without regard to case, as the API and chat.labels_changed list them."""
    return sorted(labels.split(_TAG_SEPARATOR), key=lambda name: (name.casefold(), name)) if labels else []


def _seconds(first_response_ms: int | None) -> float | None:
    return None if first_response_ms is None else first_response_ms / 1000


def _duration(duration) -> int | None:
    return None if duration is None else duration.days * 86400 + duration.seconds


# A spreadsheet reads a cell starting with one of these as a formula (CSV injection).
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _cell(text: str) -> str:
    """A text cell as `csv.writer`'s minimal quoting spells it: quoted, quotes doubled, when it
    holds the separator, a quote or a line break. A cell a spreadsheet would read as a formula gets a
    leading apostrophe, so it opens as the text it is."""
    if text.startswith(_FORMULA_START):
        text = "'" + text
    if "," in text or '"' in text or "\r" in text or "\n" in text:
        return '"' + text.replace('"', '""') + '"'
    return text


def csv_lines(page: list[tuple]) -> str:
    """A page's rows (as export_pages yields them) as CSV lines in COLUMNS' order: booleans
    `true`/`false`, a null an empty cell, tags and labels joined by `,`. Built as one string per row rather than
    through `csv.writer`, which costs more than the rest of a row: every cell but the channel and the
    tags is a number, an ISO timestamp or a word of a fixed vocabulary that never needs quoting."""
    lines = []
    append = lines.append
    for (
        chat_id,
        channel,
        created_at,
        closed_at,
        contact_guid,
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
        assigned_by,
        sla_breached,
        labels,
    ) in page:
        append(
            f"{chat_id},{_cell(channel)},{_iso(created_at)},{'' if closed_at is None else _iso(closed_at)},"
            f"{contact_guid},{'' if department_id is None else department_id},"
            f"{'' if first_response_ms is None else first_response_ms / 1000},"
            f"{'' if duration is None else duration.days * 86400 + duration.seconds},{messages},"
            f"{accepted_type},{handled_type},{_TEXT[ai_to_human]},{_TEXT[human_to_ai]},"
            f"{'' if rating is None else rating},{_cell(','.join(_tag_names(tags))) if tags else ''},"
            f"{assigned_by or ''},{_TEXT[sla_breached]},{_cell(','.join(_label_names(labels))) if labels else ''}\r\n"
        )
    return "".join(lines)


def json_lines(page: list[tuple]) -> bytes:
    """A page's rows as JSON objects with COLUMNS' keys, one a line (orjson: the standard library's
    encoder costs more than the rest of a row)."""
    dumps = orjson.dumps
    return b"".join(
        [
            dumps(
                {
                    "id": chat_id,
                    "channel": channel,
                    "created_at": _iso(created_at),
                    "closed_at": None if closed_at is None else _iso(closed_at),
                    "contact_id": contact_guid or None,
                    "department_id": department_id,
                    "first_response_seconds": _seconds(first_response_ms),
                    "duration_seconds": _duration(duration),
                    "messages": messages,
                    "accepted_by_type": accepted_type or None,
                    "handled_by_type": handled_type or None,
                    "ai_to_human": ai_to_human,
                    "human_to_ai": human_to_ai,
                    "rating": rating,
                    "tags": _tag_names(tags),
                    "assigned_by": assigned_by or None,
                    "sla_breached": sla_breached,
                    "labels": _label_names(labels),
                },
                option=_LINE,
            )
            for (
                chat_id,
                channel,
                created_at,
                closed_at,
                contact_guid,
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
                assigned_by,
                sla_breached,
                labels,
            ) in page
        ]
    )


_TEXT = {True: "true", False: "false"}
_LINE = orjson.OPT_APPEND_NEWLINE


def render(pages: Iterable[list[tuple]], fmt: str) -> Iterator[bytes]:
    """The export's body in `fmt`, one piece per page: CSV with a header row, or JSON Lines."""
    if fmt == "csv":
        yield (",".join(COLUMNS) + "\r\n").encode()
        for page in pages:
            yield csv_lines(page).encode()
        return
    for page in pages:
        yield json_lines(page)


def filename(window: Window, fmt: str) -> str:
    def day(moment: datetime) -> str:
        return moment.strftime("%Y%m%dT%H%M")

    return f"chats-{day(window.start)}-{day(window.end)}.{fmt}"
