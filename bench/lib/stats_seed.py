"""The statistics benchmark's data set, generated inside PostgreSQL (INSERT ... SELECT over
generate_series): one widget ("bench-stats") with 200 agents (the owner, 198 more people and the AI
operator) and, at BENCH_SCALE=1.0, 1 000 000 chats and 10 000 000 messages over the last 370 days.

Rows are deterministic (hashes of the chat number). Each chat gets a channel (1% internal
department rooms), a handling and a consistent attribution (missed chats, a fifth of them with a
routing owner; people, the AI operator, escalations both ways; 15% of people's chats transferred),
a first reply 5 s to 10 min after creation (4% are returning visitors answered two days later, in a
new conversation), 10 messages (visitor, operator, notes, rating requests), and a rating for 30% of
the answered chats. Chat facts (first_agent_reply_at, accepted/handled, last_message_at) agree with
the messages. Secondary indexes and foreign keys of the three big tables are dropped for the load
and recreated from their own definitions. The statistics facts are then built by
`manage.py rebuild_stats_facts` (bench/stats.py runs it).
"""

from __future__ import annotations

import os
import time
from datetime import timedelta

from bench.lib.seed import BIG_TABLES, _drop_secondary_structures

WIDGET_NAME = "bench-stats"
OWNER_EMAIL = "bench-stats@bench.invalid"
AGENTS = 200  # including the owner and the AI operator
MESSAGES_PER_CHAT = 10
SPAN_DAYS = 370


def scale_from_env() -> float:
    raw = os.environ.get("BENCH_SCALE", "1.0")
    try:
        scale = float(raw)
    except ValueError:
        raise SystemExit(f"BENCH_SCALE must be a number, got {raw!r}") from None
    if not 0 < scale <= 10:
        raise SystemExit("BENCH_SCALE must be in (0, 10]")
    return scale


def seeded_scale() -> float | None:
    from apps.core.models import Widget

    widget = Widget.objects.select_related("account").filter(name=WIDGET_NAME).first()
    if widget is None:
        return None
    try:
        return float(widget.account.name.removeprefix("bench-stats scale="))
    except ValueError:
        return -1.0


def _step(label: str, started: float) -> float:
    now = time.monotonic()
    print(f"stats seed:   {label} ({now - started:.1f} s)", flush=True)
    return now


def ensure_seeded() -> tuple[float, bool]:
    """(scale of the data set in the database, whether it was seeded now)."""
    existing = seeded_scale()
    wanted = scale_from_env()
    if existing is not None:
        if existing != wanted:
            print(f"stats seed: the database holds scale {existing} (BENCH_SCALE asks {wanted}); using it as it is")
        else:
            print(f"stats seed: data set of scale {existing} present; skipping")
        return existing, False
    seed(wanted)
    return wanted, True


# One row per chat: everything the chat, its messages, its rating and its transfer are made of.
_PLAN_SQL = """
CREATE TEMP TABLE stats_plan ON COMMIT DROP AS
SELECT p.*,
       CASE WHEN p.handling = 'missed' THEN NULL
            WHEN p.returning THEN p.created_at + interval '2 days 3 minutes'
            ELSE p.created_at + make_interval(secs => 5 + (p.h >> 52 & 1023) * 595.0 / 1023) END AS reply_at
FROM (
    SELECT q.*,
           CASE WHEN q.hk < 15 THEN 'missed' WHEN q.hk < 55 THEN 'human' WHEN q.hk < 80 THEN 'ai'
                WHEN q.hk < 92 THEN 'ai_to_human' ELSE 'human_to_ai' END AS handling,
           a.humans[1 + mod(q.h >> 24, array_length(a.humans, 1))] AS h1,
           a.humans[1 + mod(q.h >> 32, array_length(a.humans, 1))] AS h2,
           a.ai AS ai,
           mod(q.h >> 40, 100) < 15 AS moved,
           mod(q.h >> 40, 100) < 20 AS routed,
           mod(q.h >> 46, 100) < 4 AS returning,
           1 + mod(q.h >> 62, 2) AS j
    FROM (
        SELECT n, h, mod(h >> 16, 100) AS hk,
               %(t0)s::timestamptz
                   + make_interval(secs => n * %(step)s + (h >> 8 & 255) * %(step)s / 256) AS created_at,
               CASE WHEN mod(h, 100) < 60 THEN 'widget' WHEN mod(h, 100) < 78 THEN 'tg'
                    WHEN mod(h, 100) < 88 THEN 'vk' WHEN mod(h, 100) < 94 THEN 'wa'
                    WHEN mod(h, 100) < 97 THEN 'ch12' ELSE 'ok' END AS channel,
               mod(h >> 56, 100) = 0 AS is_internal
        FROM (SELECT n, hashint8extended(n, 7) & 9223372036854775807 AS h
              FROM generate_series(0::bigint, %(chats)s - 1) AS n) s
    ) q CROSS JOIN stats_agents a
) p
"""

_CHATS_SQL = """
INSERT INTO chats_chat (id, widget_id, contact_id, channel, status, is_internal, agent_id, department_id,
                        accepted_by_id, accepted_by_type, accepted_at, handled_by_id, handled_by_type, handled_at,
                        handling, went_ai_to_human, went_human_to_ai, last_message_id, last_message_at,
                        has_client_messages, first_agent_reply_at, last_typing_at, created_at, updated_at, closed_at)
SELECT %(cid0)s + x.n, %(widget)s, %(ct0)s + x.n, x.channel, 'expired', x.is_internal, x.owner, NULL,
       x.accepted_id, x.accepted_type, x.reply_at, x.handled_id, x.handled_type,
       CASE WHEN x.handling = 'human' AND x.moved THEN x.reply_at + interval '90 seconds' ELSE x.reply_at END,
       x.handling, x.handling = 'ai_to_human', x.handling = 'human_to_ai',
       %(mid0)s + x.n * 10 + 9, x.last_at, true, x.reply_at, NULL, x.created_at, x.last_at, NULL
FROM (
    SELECT p.*,
           coalesce(p.reply_at + (9 - p.j) * interval '40 seconds', p.created_at + interval '450 seconds') AS last_at,
           CASE p.handling WHEN 'missed' THEN CASE WHEN p.routed THEN p.h1 END
                           WHEN 'human' THEN CASE WHEN p.moved THEN p.h2 ELSE p.h1 END
                           WHEN 'ai' THEN NULL ELSE p.h1 END AS owner,
           CASE p.handling WHEN 'missed' THEN NULL WHEN 'human' THEN p.h1 WHEN 'human_to_ai' THEN p.h1
                           ELSE p.ai END AS accepted_id,
           CASE p.handling WHEN 'missed' THEN '' WHEN 'human' THEN 'human' WHEN 'human_to_ai' THEN 'human'
                           ELSE 'ai' END AS accepted_type,
           CASE p.handling WHEN 'missed' THEN NULL WHEN 'human' THEN CASE WHEN p.moved THEN p.h2 ELSE p.h1 END
                           WHEN 'ai_to_human' THEN p.h1 ELSE p.ai END AS handled_id,
           CASE p.handling WHEN 'missed' THEN '' WHEN 'human' THEN 'human' WHEN 'ai_to_human' THEN 'human'
                           ELSE 'ai' END AS handled_type
    FROM stats_plan p
) x
"""

# Message k of chat n. Missed chats: 10 visitor messages 50 s apart. Answered chats: visitor
# messages before the reply (the returning visitor's second one two days later), the first reply
# (index j, by the operator who accepted) at reply_at, then visitor and operator (the handler)
# alternating 40 s apart, operators' with some notes and rating requests among them.
_MESSAGES_SQL = """
INSERT INTO chats_message (id, widget_id, chat_id, type, body, markdown, file_id, coords, sticker, keyboard,
                           origin, author_kind, agent_id, visibility, seen_at, created_at)
SELECT %(mid0)s + y.n * 10 + y.k, %(widget)s, %(cid0)s + y.n, 'text', '', '', NULL, NULL, NULL, NULL, '',
       y.author, CASE WHEN y.author IN ('agent', 'ai') THEN y.operator END,
       CASE WHEN y.author IN ('agent', 'ai') AND mod(y.hm, 10) = 0 AND y.k > y.j THEN 'note' ELSE 'public' END,
       NULL, y.at
FROM (
    SELECT x.*,
           CASE WHEN x.handling = 'missed' OR x.k < x.j OR (x.k > x.j AND mod(x.k - x.j, 2) = 1) THEN 'client'
                WHEN x.k > x.j AND mod(x.hm >> 8, 25) = 0 THEN 'system'
                WHEN x.k = x.j THEN CASE WHEN x.accepted_type = 'ai' THEN 'ai' ELSE 'agent' END
                ELSE CASE WHEN x.handled_type = 'ai' THEN 'ai' ELSE 'agent' END END AS author,
           CASE WHEN x.k = x.j THEN x.accepted_id ELSE x.handled_id END AS operator,
           CASE WHEN x.handling = 'missed' THEN x.created_at + x.k * interval '50 seconds'
                WHEN x.k = 0 THEN x.created_at
                WHEN x.k < x.j AND x.returning THEN x.reply_at - interval '2 minutes'
                WHEN x.k < x.j THEN x.created_at + (x.reply_at - x.created_at) / 2
                ELSE x.reply_at + (x.k - x.j) * interval '40 seconds' END AS at
    FROM (
        SELECT c.id - %(cid0)s AS n, k, p.j, p.returning, p.reply_at, c.handling, c.created_at,
               c.accepted_by_id AS accepted_id, c.accepted_by_type AS accepted_type,
               c.handled_by_id AS handled_id, c.handled_by_type AS handled_type,
               hashint8extended(c.id * 16 + k, 9) & 9223372036854775807 AS hm
        FROM chats_chat c JOIN stats_plan p ON p.n = c.id - %(cid0)s, generate_series(0, 9) AS k
        WHERE c.widget_id = %(widget)s
    ) x
) y
"""


def seed(scale: float) -> None:
    from django.db import connection, transaction

    from apps.core.services import create_widget

    chats = max(100, round(1_000_000 * scale))
    print(
        f"stats seed: scale {scale}: {chats} chats, {chats * MESSAGES_PER_CHAT} messages, {AGENTS} agents",
        flush=True,
    )
    started = t = time.monotonic()
    with transaction.atomic(), connection.cursor() as cur:
        for setting in ("maintenance_work_mem = '1GB'", "work_mem = '256MB'", "synchronous_commit = off"):
            cur.execute(f"SET LOCAL {setting}")
        widget = create_widget(owner_email=OWNER_EMAIL, name=WIDGET_NAME, enable_api=True)
        widget.account.name = f"bench-stats scale={scale}"
        widget.account.save(update_fields=["name"])
        cur.execute(
            """
            INSERT INTO agents_agent (widget_id, name, surname, email, avatar, role, type, status, show_in_header,
                                      ai_assistant_id, is_owner, created_at, user_id)
            SELECT %(w)s, 'Operator ' || n, '', 'stats-' || n || '@bench.invalid', NULL::varchar, 'operator',
                   'human', 'active', true, NULL::bigint, false, now() - interval '400 days', NULL::int
            FROM generate_series(1, %(people)s) AS n
            UNION ALL
            SELECT %(w)s, 'AI assistant', '', '', NULL, 'operator', 'ai', 'active', true, NULL, false,
                   now() - interval '400 days', NULL
            """,
            {"w": widget.pk, "people": AGENTS - 2},
        )
        cur.execute(
            """
            CREATE TEMP TABLE stats_agents ON COMMIT DROP AS
            SELECT (SELECT array_agg(id ORDER BY id) FROM agents_agent WHERE widget_id = %(w)s AND type = 'human')
                       AS humans,
                   (SELECT min(id) FROM agents_agent WHERE widget_id = %(w)s AND type = 'ai') AS ai
            """,
            {"w": widget.pk},
        )
        dropped = _drop_secondary_structures(cur)
        t = _step(f"widget and agents; dropped {len(dropped)} indexes and foreign keys", t)

        ids = {}
        for table, key in (("chats_message", "mid0"), ("chats_chat", "cid0"), ("chats_contact", "ct0")):
            cur.execute(f"SELECT coalesce(max(id), 0) + 1 FROM {table}")
            ids[key] = cur.fetchone()[0]
        cur.execute("SELECT date_trunc('day', now() AT TIME ZONE 'Europe/Moscow') AT TIME ZONE 'Europe/Moscow'")
        today = cur.fetchone()[0]
        cur.execute("SELECT now()")
        now = cur.fetchone()[0]
        t0 = today - timedelta(days=SPAN_DAYS - 1)
        step = (now - t0).total_seconds() / chats
        params = {"widget": widget.pk, "chats": chats, "t0": t0, "step": step, **ids}

        cur.execute(
            """
            INSERT INTO chats_contact (id, widget_id, guid, name, email, phone, attributes, locale, created_at,
                                       updated_at)
            SELECT %(ct0)s + n, %(widget)s, md5('bench-stats-' || n), '', '', '', '{}', '', %(t0)s, %(t0)s
            FROM generate_series(0::bigint, %(chats)s - 1) AS n
            """,
            params,
        )
        t = _step(f"{chats} contacts", t)
        cur.execute(_PLAN_SQL, params)
        cur.execute("CREATE UNIQUE INDEX ON stats_plan (n)")
        cur.execute("ANALYZE stats_plan")
        t = _step("chat plan", t)
        cur.execute(_CHATS_SQL, params)
        t = _step(f"{chats} chats", t)
        cur.execute(_MESSAGES_SQL, params)
        t = _step(f"{chats * MESSAGES_PER_CHAT} messages", t)
        cur.execute(
            """
            INSERT INTO chats_chattransfer (widget_id, chat_id, from_agent_id, to_agent_id, created_at)
            SELECT %(widget)s, %(cid0)s + n, h1, h2, reply_at + interval '90 seconds'
            FROM stats_plan WHERE handling = 'human' AND moved
            """,
            params,
        )
        cur.execute(
            """
            INSERT INTO chats_rating (widget_id, chat_id, value, comment, agent_id, created_at)
            SELECT %(widget)s, c.id, 1 + mod(p.h >> 4, 5), '', c.handled_by_id, c.last_message_at + interval '1 minute'
            FROM chats_chat c JOIN stats_plan p ON p.n = c.id - %(cid0)s
            WHERE c.widget_id = %(widget)s AND c.handling <> 'missed' AND mod(p.h >> 12, 10) < 3
            """,
            params,
        )
        t = _step("transfers and ratings", t)
        for table in BIG_TABLES:
            cur.execute(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), (SELECT max(id) FROM {table}))")
        for label, sql in dropped:
            cur.execute(sql)
            t = _step(f"recreated {label}", t)
    with connection.cursor() as cur:
        for table in (*BIG_TABLES, "chats_rating", "chats_chattransfer", "agents_agent"):
            cur.execute(f"VACUUM (ANALYZE) {table}")
    _step("VACUUM ANALYZE", t)
    print(f"stats seed: done in {time.monotonic() - started:.0f} s", flush=True)
