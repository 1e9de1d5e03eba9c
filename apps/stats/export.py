"""Conversations exported row by row (GET /v1/chats/export): one row per chat created in a window,
as CSV or JSON Lines.

Rows are read from the chat facts (apps.stats.models.ChatFacts: channel, creation, attribution,
escalations, first response) joined to the chat row (closed_at, contact, department), in keyset
pages of PAGE_SIZE ordered by (created_at, chat id) on the facts' (widget, created_at) index. What
the facts do not hold comes in three queries per page, never one per row: the counted messages (the
definition of the statistics: public, by the visitor, a person or the AI operator), the chat's
latest rating and its contact's tags. Memory stays one page whatever the window's size. Chats whose
contact is under erasure are left out, as every read of chats does.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Iterator
from datetime import datetime

from django.db.models import Count, Q

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
)


def _pages(widget_id: int, window: Window) -> Iterator[list[dict]]:
    facts = (
        ChatFacts.objects.filter(widget_id=widget_id, created_at__gte=window.start, created_at__lt=window.end)
        .filter(not_erasing("chat__contact_id"))
        .order_by("created_at", "chat_id")
        .values(*_FIELDS)
    )
    after: Q | None = None
    while True:
        page = list((facts.filter(after) if after is not None else facts)[:PAGE_SIZE])
        if not page:
            return
        yield page
        if len(page) < PAGE_SIZE:
            return
        last = page[-1]
        after = Q(created_at__gt=last["created_at"]) | Q(created_at=last["created_at"], chat_id__gt=last["chat_id"])


def _seconds(start: datetime, end: datetime | None) -> int | None:
    return None if end is None else int((end - start).total_seconds())


def export_rows(*, widget_id: int, window: Window) -> Iterator[dict]:
    """The rows of the widget's chats created in `window`, oldest first, with the COLUMNS as keys."""
    for page in export_pages(widget_id=widget_id, window=window):
        yield from page


def export_pages(*, widget_id: int, window: Window) -> Iterator[list[dict]]:
    """`export_rows` a page at a time."""
    for page in _pages(widget_id, window):
        ids = [fact["chat_id"] for fact in page]
        messages = dict(
            Message.objects.filter(
                widget_id=widget_id,
                chat_id__in=ids,
                visibility=Message.Visibility.PUBLIC,
                author_kind__in=COUNTED_AUTHORS,
            )
            .order_by()
            .values("chat_id")
            .annotate(n=Count("id"))
            .values_list("chat_id", "n")
        )
        ratings = dict(  # the latest rating of each chat wins
            Rating.objects.filter(widget_id=widget_id, chat_id__in=ids)
            .order_by("chat_id", "created_at", "id")
            .values_list("chat_id", "value")
        )
        tags: dict[int, list[str]] = {}
        contacts = {fact["chat__contact_id"] for fact in page}
        for contact_id, name in (
            ContactTag.objects.filter(widget_id=widget_id, contact_id__in=contacts)
            .order_by("contact_id", "name")
            .values_list("contact_id", "name")
        ):
            tags.setdefault(contact_id, []).append(name)
        rows = []
        for fact in page:
            chat_id, created_at, closed_at = fact["chat_id"], fact["created_at"], fact["chat__closed_at"]
            first_response_ms = fact["first_response_ms"]
            rows.append(
                {
                    "id": chat_id,
                    "channel": fact["channel"],
                    "created_at": created_at.isoformat(),
                    "closed_at": closed_at.isoformat() if closed_at else None,
                    "contact_id": fact["chat__contact_id"],
                    "department_id": fact["chat__department_id"],
                    "first_response_seconds": None if first_response_ms is None else first_response_ms / 1000,
                    "duration_seconds": _seconds(created_at, closed_at),
                    "messages": messages.get(chat_id, 0),
                    "accepted_by_type": fact["accepted_type"] or None,
                    "handled_by_type": fact["handled_type"] or None,
                    "ai_to_human": fact["went_ai_to_human"],
                    "human_to_ai": fact["went_human_to_ai"],
                    "rating": ratings.get(chat_id),
                    "tags": tags.get(fact["chat__contact_id"], []),
                }
            )
        yield rows


class _Line:
    """csv.writer's file: `write` hands the formatted line back instead of keeping it."""

    def write(self, line: str) -> str:
        return line


def _csv_cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ",".join(value)
    return str(value)


def render(pages: Iterable[list[dict]], fmt: str) -> Iterator[bytes]:
    """The export's body in `fmt`, one piece per page: CSV with a header row (booleans `true`/`false`,
    nothing for null, tags joined by `,`), or one JSON object per line."""
    if fmt == "csv":
        writer = csv.writer(_Line())
        yield writer.writerow(COLUMNS).encode()
        for page in pages:
            yield "".join(writer.writerow([_csv_cell(row[column]) for column in COLUMNS]) for row in page).encode()
        return
    for page in pages:
        yield "".join(json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n" for row in page).encode()


def filename(window: Window, fmt: str) -> str:
    def day(moment: datetime) -> str:
        return moment.strftime("%Y%m%dT%H%M")

    return f"chats-{day(window.start)}-{day(window.end)}.{fmt}"
