"""The chats export (GET /v1/chats/export): rows a second and the server's memory over a year of chats.

A widget of its own (EXPORT_WIDGET_NAME) holds CHATS x BENCH_SCALE chats (1,000,000 at scale 1.0)
spread over 2025, each with its statistics facts row and two counted messages; every tenth chat is
rated and every fifth contact tagged. It is made once with bulk inserts and kept: the widget is the
marker, so a second run measures at once.

The service under uvicorn (bench.lib.common.Server, one process) streams the whole year as CSV and
as JSON Lines; the client reads the body as it arrives and counts its lines. The floor is PostgreSQL
alone: `COPY (the facts of the window, every exported column but the tags) TO STDOUT` read by psycopg in this process,
the fastest the rows can leave the database at all.

Targets (per format): at least 50,000 rows a second, and the server's resident memory at its peak
during the download at most 100 MB above what it was before it (`rss_growth_mib`), with every
row delivered.
"""

from __future__ import annotations

import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.lib.common import RssSampler, Server, session, skipped  # noqa: E402
from bench.lib.env import migrations_pending, postgres_problem, setup_django  # noqa: E402
from bench.lib.seed import scale_from_env  # noqa: E402
from bench.lib.targets import bench, info  # noqa: E402

NAME = "chat_export"
CHATS = 1_000_000
EXPORT_WIDGET_NAME = "bench-export"
YEAR = datetime(2025, 1, 1, tzinfo=UTC)
BATCH = 5000
TARGET = "rows_per_s>=50000,rss_growth_mib<=100,missing==0"


def seed(count: int) -> int:
    """The export widget with `count` chats (made once); its id."""
    from django.db import transaction

    from apps.chats.models import Chat, Contact, ContactTag, Message, Rating
    from apps.core import services
    from apps.core.models import Widget
    from apps.stats.facts import moscow_day
    from apps.stats.models import ChatFacts
    from bench.lib.restore import delete_in_batches

    existing = Widget.objects.filter(name=EXPORT_WIDGET_NAME).first()
    if existing is not None:
        made = ChatFacts.objects.filter(widget=existing).count()
        if made == count:
            return existing.pk
        print(f"{NAME}: the export widget holds {made} chats, not {count}: making it again", flush=True)
        # Its big tables first, a batch at a time: the widget's own delete would gather every chat of
        # it into one statement, past PostgreSQL's 65,535 parameters.
        for model in (Message, Chat, Contact):
            delete_in_batches(model.objects.filter(widget=existing))
        existing.delete()
    started = time.perf_counter()
    step = timedelta(seconds=365 * 86400 / count)
    with transaction.atomic():
        widget = services.create_widget(
            owner_email="bench-export@bench.invalid", name=EXPORT_WIDGET_NAME, enable_api=True
        )
        for first in range(0, count, BATCH):
            numbers = range(first, min(first + BATCH, count))
            contacts = Contact.objects.bulk_create([Contact(widget=widget, name=f"Visitor {n}") for n in numbers])
            chats = []
            for n, contact in zip(numbers, contacts, strict=True):
                created = YEAR + step * n
                closed = created + timedelta(minutes=5 + n % 50) if n % 3 else None
                chats.append(
                    Chat(
                        widget=widget,
                        contact=contact,
                        channel=("widget", "tg", "vk")[n % 3],
                        status=Chat.Status.EXPIRED if closed else Chat.Status.ACTIVE,
                        handling=Chat.Handling.HUMAN,
                        accepted_by_type="human",
                        handled_by_type="human",
                        created_at=created,
                        updated_at=closed or created,
                        closed_at=closed,
                        has_client_messages=True,
                    )
                )
            chats = Chat.objects.bulk_create(chats)
            ChatFacts.objects.bulk_create(
                ChatFacts(
                    chat=chat,
                    widget=widget,
                    created_at=chat.created_at,
                    day=moscow_day(chat.created_at),
                    channel=chat.channel,
                    handling=chat.handling,
                    accepted_type="human",
                    handled_type="human",
                    went_ai_to_human=n % 7 == 0,
                    first_reply_at=chat.created_at + timedelta(seconds=30),
                    conversation_started_at=chat.created_at,
                    first_response_ms=30_000 + n % 1000,
                    contact_id=chat.contact_id,
                    contact_guid=chat.contact.guid,
                    closed_at=chat.closed_at,
                    messages=2,
                    rating=1 + n % 5 if n % 10 == 0 else None,
                )
                for n, chat in zip(numbers, chats, strict=True)
            )
            Message.objects.bulk_create(
                Message(widget=widget, chat=chat, body=body, author_kind=kind, created_at=chat.created_at + delay)
                for chat in chats
                for body, kind, delay in (
                    ("Where is my parcel?", Message.Author.CLIENT, timedelta()),
                    ("It ships today.", Message.Author.AGENT, timedelta(seconds=30)),
                )
            )
            Rating.objects.bulk_create(
                Rating(widget=widget, chat=chat, value=1 + n % 5, created_at=chat.created_at + timedelta(minutes=1))
                for n, chat in zip(numbers, chats, strict=True)
                if n % 10 == 0
            )
            ContactTag.objects.bulk_create(
                ContactTag(widget=widget, contact=contact, name=name)
                for n, contact in zip(numbers, contacts, strict=True)
                if n % 5 == 0
                for name in ("vip", "returning")
            )
    print(f"{NAME}: made {count} chats in {time.perf_counter() - started:.0f} s", flush=True)
    return widget.pk


def floor(widget_id: int, start: datetime, end: datetime) -> tuple[int, float]:
    """Rows and seconds of COPY ... TO STDOUT of the window's facts (the export's columns but the tags)."""
    from django.db import connection

    sql = (
        "COPY (SELECT chat_id, channel, created_at, closed_at, contact_guid, department_id, first_response_ms, "
        "messages, accepted_type, handled_type, went_ai_to_human, went_human_to_ai, rating "
        f"FROM stats_chatfacts WHERE widget_id = {int(widget_id)} AND created_at >= '{start.isoformat()}' "
        f"AND created_at < '{end.isoformat()}' ORDER BY created_at, chat_id) TO STDOUT"
    )
    rows = 0
    started = time.perf_counter()
    connection.ensure_connection()
    with connection.connection.cursor() as cursor, cursor.copy(sql) as copy:
        for block in copy:
            rows += bytes(block).count(b"\n")
    return rows, time.perf_counter() - started


def download(server: Server, token: str, fmt: str) -> tuple[int, float, int, int]:
    """(lines, seconds, server RSS before in KiB, its peak during the download in KiB)."""
    http = session(token)
    params = {"from": "2025-01-01T00:00:00Z", "to": "2026-01-01T00:00:00Z", "format": fmt}
    before = server.rss_kib()
    lines = 0
    started = time.perf_counter()
    with RssSampler(server) as sampler:
        with http.get(f"{server.base}/api/v1/chats/export", params=params, stream=True, timeout=600) as response:
            assert response.status_code == 200, response.text[:500]
            for chunk in response.iter_content(chunk_size=1 << 16):
                lines += chunk.count(b"\n")
    return lines, time.perf_counter() - started, before, sampler.peak


def main() -> int:
    problem = postgres_problem()
    if problem:
        skipped(NAME, problem)
        return 0
    setup_django()
    if migrations_pending():
        print(f"BENCH {NAME} FAILED (unapplied migrations: run `manage.py migrate` on DATABASE_URL first)", flush=True)
        return 1
    from apps.core import services
    from apps.core.models import ApiToken, Widget

    count = max(1000, int(CHATS * scale_from_env()))
    widget_id = seed(count)
    issued = services.issue_token(widget=Widget.objects.get(pk=widget_id), scopes=["chats:read"], name="bench-export")
    try:
        floor_rows, floor_seconds = floor(widget_id, YEAR, YEAR.replace(year=2026))
        assert floor_rows == count, (floor_rows, count)
        floor_rate = floor_rows / floor_seconds
        info(f"{NAME}_floor_copy", rows=floor_rows, seconds=round(floor_seconds, 2), rows_per_s=round(floor_rate))
        with Server(NAME) as server:
            download(server, issued.plaintext, "jsonl")  # warm: imports, the first connection, the plans
            for fmt in ("csv", "jsonl"):
                lines, seconds, before, peak = download(server, issued.plaintext, fmt)
                rows = lines - (1 if fmt == "csv" else 0)
                bench(
                    f"{NAME}_{fmt}",
                    unit="rows/s,MiB",
                    target=TARGET,
                    rows_per_s=round(rows / seconds),
                    floor_rows_per_s=round(floor_rate),
                    ratio=round((rows / seconds) / floor_rate, 3),
                    rows=rows,
                    missing=count - rows,
                    seconds=round(seconds, 2),
                    rss_before_mib=round(before / 1024),
                    rss_peak_mib=round(peak / 1024),
                    rss_growth_mib=round((peak - before) / 1024, 1),
                )
        return 0
    finally:
        ApiToken.objects.filter(pk=issued.token.pk).delete()


if __name__ == "__main__":
    sys.exit(main())
