"""Conversations exported row by row (GET /v1/chats/export): one row per chat created in a window,
as CSV or JSON Lines.

Rows are read from the chat facts (apps.stats.models.ChatFacts: channel, creation, attribution,
escalations, first response) joined to the chat row (closed_at, contact, department), in keyset
pages of PAGE_SIZE ordered by (created_at, chat id) on the facts' (widget, created_at) index. What
the facts do not hold never costs a query per row: the counted messages (the definition of the
statistics: public, by the visitor, a person or the AI operator) and the chat's latest rating are
correlated subqueries of the page's statement, on the messages' and ratings' chat indexes, and the
contacts' tags are one more query per page. Memory stays one page whatever the window's size.
Chats whose contact is under erasure are left out, as every read of chats does.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Iterator
from datetime import datetime

from django.db.models import Count, OuterRef, Q, Subquery
from django.db.models.functions import Coalesce

from apps.chats.models import ContactTag, Message, Rating
from apps.erasure.selectors import not_erasing

from .facts import COUNTED_AUTHORS
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
_FIELDS = (
    "chat_id",
    "channel",
    "created_at",
    "chat__closed_at",
    "chat__contact_id",
    "chat__department_id",
    "first_response_ms",
    "accepted_type",
    "handled_type",
    "went_ai_to_human",
    "went_human_to_ai",
    "messages",
    "rating",
)


def _facts(widget_id: int, window: Window):
    """The window's facts, oldest first, as tuples of _FIELDS: the counted messages and the latest
    rating are correlated subqueries on the (chat, ...) indexes, so a page is one statement."""
    counted = (
        Message.objects.filter(
            chat_id=OuterRef("chat_id"), visibility=Message.Visibility.PUBLIC, author_kind__in=COUNTED_AUTHORS
        )
        .order_by()
        .values("chat_id")
        .annotate(n=Count("id"))
        .values("n")
    )
    latest = Rating.objects.filter(chat_id=OuterRef("chat_id")).order_by("-created_at", "-id").values("value")[:1]
    return (
        ChatFacts.objects.filter(widget_id=widget_id, created_at__gte=window.start, created_at__lt=window.end)
        .filter(not_erasing("chat__contact_id"))
        .annotate(messages=Coalesce(Subquery(counted), 0), rating=Subquery(latest))
        .order_by("created_at", "chat_id")
        .values_list(*_FIELDS)
    )


def _pages(widget_id: int, window: Window) -> Iterator[tuple[list[tuple], dict[int, list[str]]]]:
    """Keyset pages of _facts with the tags of their contacts (one more query, on the page's
    contacts as a subquery of the same page)."""
    facts = _facts(widget_id, window)
    after: Q | None = None
    while True:
        selected = facts.filter(after) if after is not None else facts
        page = list(selected[:PAGE_SIZE])
        if not page:
            return
        tags: dict[int, list[str]] = {}
        contacts = selected.values_list("chat__contact_id", flat=True)[:PAGE_SIZE]
        for contact_id, name in (
            ContactTag.objects.filter(widget_id=widget_id, contact_id__in=contacts)
            .order_by("contact_id", "name")
            .values_list("contact_id", "name")
        ):
            tags.setdefault(contact_id, []).append(name)
        yield page, tags
        if len(page) < PAGE_SIZE:
            return
        created_at, chat_id = page[-1][2], page[-1][0]
        after = Q(created_at__gt=created_at) | Q(created_at=created_at, chat_id__gt=chat_id)


def export_pages(*, widget_id: int, window: Window) -> Iterator[list[tuple]]:
    """The rows of the widget's chats created in `window`, oldest first, a page at a time: each row a
    tuple of the COLUMNS' values."""
    for page, tags in _pages(widget_id, window):
        yield [
            (
                chat_id,
                channel,
                created_at.isoformat(),
                closed_at.isoformat() if closed_at else None,
                contact_id,
                department_id,
                None if first_response_ms is None else first_response_ms / 1000,
                None if closed_at is None else int((closed_at - created_at).total_seconds()),
                messages,
                accepted_type or None,
                handled_type or None,
                ai_to_human,
                human_to_ai,
                rating,
                tags.get(contact_id, []),
            )
            for (
                chat_id,
                channel,
                created_at,
                closed_at,
                contact_id,
                department_id,
                first_response_ms,
                accepted_type,
                handled_type,
                ai_to_human,
                human_to_ai,
                messages,
                rating,
            ) in page
        ]


_TEXT = {True: "true", False: "false"}


def render(pages: Iterable[list[tuple]], fmt: str) -> Iterator[bytes]:
    """The export's body in `fmt`, one piece per page: CSV with a header row (booleans `true`/`false`,
    nothing for null, tags joined by `,`), or one JSON object per line."""
    if fmt == "csv":
        yield _csv([COLUMNS])
        for page in pages:
            # csv writes None as an empty cell; the two booleans and the tags are spelled here.
            yield _csv([(*row[:11], _TEXT[row[11]], _TEXT[row[12]], row[13], ",".join(row[14])) for row in page])
        return
    dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
    for page in pages:
        yield "".join([dumps(dict(zip(COLUMNS, row, strict=True))) + "\n" for row in page]).encode()


def _csv(rows) -> bytes:
    out = io.StringIO()
    csv.writer(out, lineterminator="\r\n").writerows(rows)
    return out.getvalue().encode()


def filename(window: Window, fmt: str) -> str:
    def day(moment: datetime) -> str:
        return moment.strftime("%Y%m%dT%H%M")

    return f"chats-{day(window.start)}-{day(window.end)}.{fmt}"
