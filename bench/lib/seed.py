"""The benchmark data set, generated inside PostgreSQL (INSERT ... SELECT over generate_series).

At BENCH_SCALE=1.0 (the issue's size): one main widget with 100 000 chats and 1 000 000 messages,
and 8 other widgets holding 4 000 000 more (50 000 chats each). Rows are deterministic (hashes of
the row number, no random()), so two seeds of one scale are identical.

- Messages of all widgets are interleaved in time (one global sequence over the last year), so the
  main widget's rows are spread over the whole table as in production, not stored in one block.
- One chat of the main widget (contact "Bench transcript room") holds 50 000 messages spread over
  the year: every 20th message of the widget at full scale.
- Bodies are 1 to 3 fragments of Russian and English support-chat words. RARE_WORD is in
  RARE_COUNT public visitor messages of the main widget; COMMON_WORD in about 10% of text messages
  everywhere; ABSENT_WORD in about 10% of the other widgets' text messages and never in the main
  widget's (no other word contains any of the three).
- Chat facts (last_message, last_message_at, has_client_messages, first_agent_reply_at, created_at)
  are computed from the messages, so they agree with what the services would have written.

Seeding is one transaction: the secondary indexes and foreign keys of the three big tables are
dropped first and recreated (from their own definitions) after the load, which is far faster
than maintaining them row by row. The marker is the main widget (MAIN_WIDGET_NAME): when it exists
the data set is there (the transaction made it all or nothing) and seeding is skipped.
"""

from __future__ import annotations

import math
import os
import random
import time
from dataclasses import dataclass

MAIN_WIDGET_NAME = "bench-main"
MAIN_OWNER_EMAIL = "bench-main@bench.invalid"
TRANSCRIPT_CONTACT_NAME = "Bench transcript room"
OTHER_WIDGETS = 8
EXTRA_AGENTS = 10  # human operators per widget besides the owner; plus one AI operator
RARE_WORD = "ксилофон"
COMMON_WORD = "доставка"
ABSENT_WORD = "возврат"
RARE_COUNT = 7
FRAGMENTS_PER_POOL = 4096
BIG_TABLES = ("chats_message", "chats_chat", "chats_contact")

RU_WORDS = (
    "здравствуйте добрый день вечер подскажите пожалуйста заказ номер оплата карта счёт чек товар "
    "размер цвет наличие склад магазин курьер пункт выдачи адрес телефон почта скидка промокод акция "
    "спасибо большое помогите вопрос проблема ошибка сайт приложение вход пароль аккаунт личный кабинет "
    "когда сколько стоит можно нельзя уже ещё сегодня завтра вчера неделю минут часов срок статус "
    "оформить отменить изменить уточнить проверить отправить получить оплатить вернуть обменять "
    "гарантия ремонт сервис мастер консультант оператор менеджер клиент ответ письмо ссылка фото "
    "документ договор тариф подписка продление списание баланс бонус баллы подарок упаковка коробка "
    "хорошо отлично понятно ясно конечно минутку секунду жду ждём сейчас посмотрю уточню передам "
    "коллегам решение вариант предложение новый старый большой маленький красный синий белый чёрный"
).split()
EN_WORDS = (
    "hello hi good morning afternoon evening please help order number payment card invoice receipt "
    "item size colour stock warehouse store courier pickup point address phone email discount coupon "
    "thanks thank you question problem error website app login password account dashboard when how much "
    "does it cost can cannot already still today tomorrow yesterday week minutes hours status place "
    "cancel change check send receive pay exchange warranty repair service technician agent operator "
    "manager customer reply letter link photo document contract plan subscription renewal charge "
    "balance bonus points gift package box great fine clear sure moment second waiting now let me look "
    "colleagues solution option offer new old big small red blue white black shipping tracking parcel"
).split()
FIRST_NAMES = ["Анна", "Иван", "Мария", "Дмитрий", "Ольга", "Сергей", "Елена", "John", "Emily", "Michael", "Sarah", ""]


@dataclass(frozen=True)
class Plan:
    """Row counts of one scale (the issue's size at 1.0)."""

    scale: float
    main_messages: int
    main_chats: int
    other_chats_each: int
    big_stride: int

    @classmethod
    def for_scale(cls, scale: float) -> Plan:
        main_messages = max(2_000, 2 * round(500_000 * scale))  # even: the others split it in 8
        return cls(
            scale=scale,
            main_messages=main_messages,
            main_chats=max(20, round(100_000 * scale)),
            other_chats_each=max(10, round(50_000 * scale)),
            big_stride=max(2, main_messages // 50_000),
        )

    @property
    def total_messages(self) -> int:
        return 5 * self.main_messages

    @property
    def big_messages(self) -> int:
        return math.ceil(self.main_messages / self.big_stride)

    @property
    def normal_main_messages(self) -> int:
        return self.main_messages - self.big_messages

    def rare_positions(self) -> list[int]:
        """Indexes (within the main widget's messages) holding RARE_WORD, outside the big chat."""
        positions = []
        for r in range(RARE_COUNT):
            i = int(self.main_messages * (r + 0.5) / RARE_COUNT)
            if i % self.big_stride == 0:
                i += 1
            positions.append(i)
        return positions


def scale_from_env() -> float:
    raw = os.environ.get("BENCH_SCALE", "1.0")
    try:
        scale = float(raw)
    except ValueError:
        raise SystemExit(f"BENCH_SCALE must be a number, got {raw!r}") from None
    if not 0 < scale <= 10:
        raise SystemExit("BENCH_SCALE must be in (0, 10]")
    return scale


def fragments(seed: int) -> list[str]:
    """FRAGMENTS_PER_POOL phrases of 2 to 6 words, about 60% Russian."""
    rng = random.Random(seed)
    out = []
    for _ in range(FRAGMENTS_PER_POOL):
        words = RU_WORDS if rng.random() < 0.6 else EN_WORDS
        out.append(" ".join(rng.choice(words) for _ in range(rng.randint(2, 6))))
    return out


def _check_vocabulary() -> None:
    for word in (*RU_WORDS, *EN_WORDS):
        for special in (RARE_WORD, COMMON_WORD, ABSENT_WORD):
            if special in word.lower():
                raise AssertionError(f"vocabulary word {word!r} contains the search word {special!r}")


def seeded_scale() -> float | None:
    """The scale of the data set in the database, or None when it is not seeded."""
    from apps.core.models import Widget

    widget = Widget.objects.select_related("account").filter(name=MAIN_WIDGET_NAME).first()
    if widget is None:
        return None
    try:
        return float(widget.account.name.removeprefix("bench scale="))
    except ValueError:
        return -1.0


def ensure_seeded(scale: float | None = None) -> float:
    """Seed unless the data set exists; returns the scale of the data set in the database."""
    existing = seeded_scale()
    wanted = scale_from_env() if scale is None else scale
    if existing is not None:
        if existing != wanted:
            print(
                f"seed: the database holds scale {existing} (BENCH_SCALE asks {wanted}); using it as it is. "
                "Seed another scale into a fresh database."
            )
        else:
            print(f"seed: data set of scale {existing} present; skipping")
        return existing
    seed(Plan.for_scale(wanted))
    return wanted


def _step(label: str, started: float) -> float:
    now = time.monotonic()
    print(f"seed:   {label} ({now - started:.1f} s)", flush=True)
    return now


def seed(plan: Plan) -> None:
    from django.db import connection, transaction

    from apps.core.models import Widget
    from apps.core.services import create_widget

    _check_vocabulary()
    print(
        f"seed: scale {plan.scale}: main widget {plan.main_chats} chats / {plan.main_messages} messages "
        f"(one chat of {plan.big_messages}), {OTHER_WIDGETS} other widgets with {4 * plan.main_messages} messages",
        flush=True,
    )
    started = t = time.monotonic()
    with transaction.atomic(), connection.cursor() as cur:
        for setting in (
            "SET LOCAL maintenance_work_mem = '1GB'",
            "SET LOCAL work_mem = '256MB'",
            "SET LOCAL synchronous_commit = off",
            "SET LOCAL max_parallel_maintenance_workers = 2",
        ):
            cur.execute(setting)
        widgets = [create_widget(owner_email=MAIN_OWNER_EMAIL, name=MAIN_WIDGET_NAME, enable_api=True)]
        widgets += [
            create_widget(owner_email=f"bench-other-{n}@bench.invalid", name=f"bench-other-{n}", enable_api=True)
            for n in range(1, OTHER_WIDGETS + 1)
        ]
        account = widgets[0].account
        account.name = f"bench scale={plan.scale}"
        account.save(update_fields=["name"])
        assert Widget.objects.filter(name=MAIN_WIDGET_NAME).count() == 1

        _create_agents(cur, [w.pk for w in widgets])
        dropped = _drop_secondary_structures(cur)
        t = _step(f"widgets, agents; dropped {len(dropped)} indexes and foreign keys", t)

        cur.execute("SELECT coalesce(max(id), 0) + 1 FROM chats_message")
        mid0 = cur.fetchone()[0]
        cur.execute("SELECT coalesce(max(id), 0) + 1 FROM chats_chat")
        cid0 = cur.fetchone()[0]
        cur.execute("SELECT coalesce(max(id), 0) + 1 FROM chats_contact")
        ct0 = cur.fetchone()[0]

        _load_fragments(cur)
        _insert_messages(cur, plan, mid0=mid0, cid0=cid0)
        t = _step(f"{plan.total_messages} messages", t)
        _insert_chats_and_contacts(cur, plan, mid0=mid0, cid0=cid0, ct0=ct0)
        t = _step("contacts and chats from the messages' facts", t)

        for table in ("chats_message", "chats_chat", "chats_contact"):
            cur.execute(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), (SELECT max(id) FROM {table}))")
        for label, sql in dropped:
            cur.execute(sql)
            t = _step(f"recreated {label}", t)
    with connection.cursor() as cur:
        for table in BIG_TABLES:
            cur.execute(f"VACUUM (ANALYZE) {table}")
        cur.execute("ANALYZE")
    _step("VACUUM ANALYZE", t)
    print(f"seed: done in {time.monotonic() - started:.0f} s", flush=True)


def _create_agents(cur, widget_ids: list[int]) -> None:
    cur.execute(
        """
        INSERT INTO agents_agent (widget_id, name, surname, email, avatar, role, type, status, show_in_header,
                                  ai_assistant_id, is_owner, created_at, user_id)
        SELECT w, (%(names)s::text[])[1 + mod(n, 7)], 'Operator ' || n, 'agent-' || n || '-' || w || '@bench.invalid',
               NULL::varchar, 'operator', 'human', 'active', true, NULL::bigint, false,
               now() - interval '400 days', NULL::int
        FROM unnest(%(widgets)s::bigint[]) AS w, generate_series(1, %(extra)s) AS n
        UNION ALL
        SELECT w, 'AI assistant', '', '', NULL, 'operator', 'ai', 'active', true, NULL, false,
               now() - interval '400 days', NULL
        FROM unnest(%(widgets)s::bigint[]) AS w
        """,
        {"names": FIRST_NAMES[:7], "widgets": widget_ids, "extra": EXTRA_AGENTS},
    )
    # wn 0 is the main widget; 1..8 the others. Human agents (the owner first) and the AI operator.
    cur.execute(
        """
        CREATE TEMP TABLE bench_w ON COMMIT DROP AS
        SELECT w.ord - 1 AS wn, w.id AS widget_id,
               (SELECT array_agg(a.id ORDER BY a.is_owner DESC, a.id) FROM agents_agent a
                 WHERE a.widget_id = w.id AND a.type = 'human') AS agent_ids,
               (SELECT min(a.id) FROM agents_agent a WHERE a.widget_id = w.id AND a.type = 'ai') AS ai_id
        FROM unnest(%(widgets)s::bigint[]) WITH ORDINALITY AS w(id, ord)
        """,
        {"widgets": widget_ids},
    )


def _drop_secondary_structures(cur) -> list[tuple[str, str]]:
    """Drop foreign keys and non-constraint indexes of the big tables; return how to recreate them
    (indexes first, then foreign keys, each from PostgreSQL's own definition)."""
    cur.execute(
        """
        SELECT i.indexname, i.indexdef FROM pg_indexes i
        WHERE i.schemaname = current_schema() AND i.tablename = ANY(%(tables)s)
          AND NOT EXISTS (SELECT 1 FROM pg_constraint c
                          WHERE c.conindid = (quote_ident(i.schemaname) || '.' || quote_ident(i.indexname))::regclass)
        ORDER BY i.indexname
        """,
        {"tables": list(BIG_TABLES)},
    )
    indexes = cur.fetchall()
    cur.execute(
        """
        SELECT c.conrelid::regclass::text, c.conname, pg_get_constraintdef(c.oid) FROM pg_constraint c
        WHERE c.contype = 'f' AND c.conrelid::regclass::text = ANY(%(tables)s) ORDER BY c.conname
        """,
        {"tables": list(BIG_TABLES)},
    )
    foreign_keys = cur.fetchall()
    # Rows inserted so far (widgets, agents) carry deferred FK checks; ALTER TABLE wants none pending.
    cur.execute("SET CONSTRAINTS ALL IMMEDIATE")
    for table, name, _ in foreign_keys:
        cur.execute(f'ALTER TABLE {table} DROP CONSTRAINT "{name}"')
    for name, _ in indexes:
        cur.execute(f'DROP INDEX "{name}"')
    recreate = [(f"index {name}", definition) for name, definition in indexes]
    recreate += [
        (f"foreign key {name}", f'ALTER TABLE {table} ADD CONSTRAINT "{name}" {definition}')
        for table, name, definition in foreign_keys
    ]
    return recreate


def _load_fragments(cur) -> None:
    main, other = fragments(1), fragments(2)
    cur.execute("CREATE TEMP TABLE bench_frag (pool int, n int, t text, PRIMARY KEY (pool, n)) ON COMMIT DROP")
    cur.execute(
        "INSERT INTO bench_frag SELECT 0, n - 1, t FROM unnest(%(main)s::text[]) WITH ORDINALITY AS f(t, n) "
        "UNION ALL SELECT 1, n - 1, t FROM unnest(%(other)s::text[]) WITH ORDINALITY AS f(t, n)",
        {"main": main, "other": other},
    )
    cur.execute("ANALYZE bench_frag")


# Row g of the global sequence (0 .. 5 * main_messages - 1), in time order over the last year:
#  - g % 5 = 0 belongs to the main widget, as its message i = g / 5; every big_stride-th of those is
#    the transcript chat's (chat number 0), the rest fill chats 1 .. main_chats - 1 in blocks;
#  - the others' message k = g - g/5 - 1 belongs to other widget k % 8, as its message k / 8,
#    filling that widget's chats in blocks.
# Hash bits of g pick fragments, author, visibility, kind and the injected words.
_MESSAGES_SQL = """
INSERT INTO chats_message (id, widget_id, chat_id, type, body, markdown, file_id, coords, sticker, keyboard,
                           origin, author_kind, agent_id, visibility, seen_at, created_at)
SELECT %(mid0)s + b.g, w.widget_id, %(cid0)s + b.chat_no, b.kind,
       CASE WHEN b.kind <> 'text' THEN ''
            WHEN b.cap THEN upper(left(b.body, 1)) || substr(b.body, 2)
            ELSE b.body END,
       '', NULL,
       CASE WHEN b.kind = 'location' THEN '{"latitude": 55.7558, "longitude": 37.6173}'::jsonb END,
       CASE WHEN b.kind = 'sticker' THEN jsonb_build_object('id', 'sticker-' || mod(b.hb, 40)) END,
       NULL, '', b.author,
       CASE WHEN b.author = 'agent' THEN w.agent_ids[1 + mod(b.chat_no, array_length(w.agent_ids, 1))]
            WHEN b.author = 'ai' THEN w.ai_id END,
       b.visibility,
       CASE WHEN b.visibility = 'public' AND mod(b.hb >> 40, 10) < 7 THEN b.at + interval '30 seconds' END,
       b.at
FROM (
    SELECT v.*,
           concat_ws(' ', f1.t, CASE WHEN v.common THEN %(common)s END, f2.t,
                     CASE WHEN v.absent THEN %(absent)s END, f3.t, CASE WHEN v.rare THEN %(rare)s END) AS body
    FROM (
        SELECT a.*,
               CASE WHEN a.author = 'client' OR mod(a.ha >> 46, 100) < 80 THEN 'public'
                    WHEN mod(a.ha >> 46, 100) < 90 THEN 'note'
                    WHEN mod(a.ha >> 46, 100) < 97 THEN 'internal'
                    ELSE 'email' END AS visibility,
               a.kind = 'text' AND mod(a.hb >> 10, 10) = 0 AS common,
               a.wn > 0 AND a.kind = 'text' AND mod(a.hb >> 20, 10) = 0 AS absent
        FROM (
            SELECT c.*,
                   CASE WHEN c.rare THEN 'client'
                        WHEN mod(c.chat_no, 7) = 3 THEN CASE WHEN mod(c.ha >> 36, 10) < 8 THEN 'agent' ELSE 'system' END
                        WHEN mod(c.ha >> 36, 100) < 45 THEN 'client'
                        WHEN mod(c.ha >> 36, 100) < 85 THEN 'agent'
                        WHEN mod(c.ha >> 36, 100) < 95 THEN 'ai'
                        ELSE 'system' END AS author,
                   CASE WHEN c.rare THEN 'text'
                        WHEN mod(c.hb, 100) = 0 THEN 'location'
                        WHEN mod(c.hb, 100) = 1 THEN 'sticker'
                        ELSE 'text' END AS kind,
                   mod(c.hb >> 30, 3) = 0 AS cap,
                   mod(c.hb >> 34, 3) AS extra_fragments
            FROM (
                SELECT s.g, s.wn, s.ha, s.hb,
                       s.wn = 0 AND s.i = ANY(%(rare_positions)s::bigint[]) AS rare,
                       CASE WHEN s.wn > 0 THEN %(main_chats)s + (s.wn - 1) * %(other_chats)s
                                               + (s.k / %(others)s) * %(other_chats)s / %(other_messages)s
                            WHEN mod(s.i, %(stride)s) = 0 THEN 0
                            ELSE 1 + (s.i - s.i / %(stride)s - 1) * (%(main_chats)s - 1) / %(normal_main)s
                       END AS chat_no,
                       %(t0)s::timestamptz
                           + make_interval(secs => s.g * %(step)s + (s.hb >> 50 & 1023) * %(step)s / 1024) AS at
                FROM (
                    SELECT g, g / 5 AS i, g - g / 5 - 1 AS k,
                           CASE WHEN mod(g, 5) = 0 THEN 0 ELSE 1 + mod(g - g / 5 - 1, %(others)s) END AS wn,
                           hashint8extended(g, 11) & 9223372036854775807 AS ha,
                           hashint8extended(g, 22) & 9223372036854775807 AS hb
                    FROM generate_series(0::bigint, %(total)s - 1) AS g
                ) s
            ) c
        ) a
    ) v
    JOIN bench_frag f1 ON f1.pool = least(v.wn, 1) AND f1.n = (v.ha & 4095)
    LEFT JOIN bench_frag f2 ON v.extra_fragments >= 1 AND f2.pool = least(v.wn, 1) AND f2.n = (v.ha >> 12 & 4095)
    LEFT JOIN bench_frag f3 ON v.extra_fragments >= 2 AND f3.pool = least(v.wn, 1) AND f3.n = (v.ha >> 24 & 4095)
) b
JOIN bench_w w ON w.wn = b.wn
"""


def _insert_messages(cur, plan: Plan, *, mid0: int, cid0: int) -> None:
    span = 365 * 24 * 3600.0
    cur.execute("SELECT now() - interval '365 days' - interval '10 minutes'")
    t0 = cur.fetchone()[0]
    cur.execute(
        _MESSAGES_SQL,
        {
            "mid0": mid0,
            "cid0": cid0,
            "total": plan.total_messages,
            "others": OTHER_WIDGETS,
            "main_chats": plan.main_chats,
            "other_chats": plan.other_chats_each,
            "other_messages": plan.main_messages // 2,
            "stride": plan.big_stride,
            "normal_main": plan.normal_main_messages,
            "rare_positions": plan.rare_positions(),
            "t0": t0,
            "step": span / plan.total_messages,
            "common": COMMON_WORD,
            "absent": ABSENT_WORD,
            "rare": RARE_WORD,
        },
    )


def _insert_chats_and_contacts(cur, plan: Plan, *, mid0: int, cid0: int, ct0: int) -> None:
    cur.execute(
        """
        CREATE TEMP TABLE bench_cf ON COMMIT DROP AS
        SELECT m.chat_id, m.chat_id - %(cid0)s AS chat_no, min(m.widget_id) AS widget_id,
               min(m.created_at) AS first_at, max(m.created_at) AS last_at, max(m.id) AS last_id,
               bool_or(m.author_kind = 'client') AS has_client,
               min(m.created_at) FILTER (WHERE m.author_kind IN ('agent', 'ai') AND m.visibility = 'public')
                   AS first_reply_at,
               bool_or(m.author_kind = 'ai' AND m.visibility = 'public') AS ai_replied,
               hashint8extended(m.chat_id - %(cid0)s, 33) & 9223372036854775807 AS hc
        FROM chats_message m WHERE m.id >= %(mid0)s GROUP BY m.chat_id
        """,
        {"cid0": cid0, "mid0": mid0},
    )
    cur.execute(
        """
        INSERT INTO chats_contact (id, widget_id, guid, name, email, phone, attributes, locale, created_at, updated_at)
        SELECT %(ct0)s + cf.chat_no, cf.widget_id, md5('bench:' || %(cid0)s || ':' || cf.chat_no),
               CASE WHEN cf.chat_no = 0 THEN %(big_name)s
                    ELSE (%(names)s::text[])[1 + mod(cf.hc, %(name_count)s)] END,
               CASE WHEN mod(cf.hc >> 8, 2) = 0 THEN 'visitor' || cf.chat_no || '@example.com' ELSE '' END,
               CASE WHEN mod(cf.hc >> 9, 3) = 0 THEN '+7 9' || lpad((mod(cf.hc, 1000000000))::text, 9, '0') ELSE '' END,
               CASE WHEN mod(cf.hc >> 10, 4) = 0 THEN '{"plan": "pro", "source": "ads"}'::jsonb ELSE '{}'::jsonb END,
               CASE WHEN mod(cf.hc >> 12, 3) = 0 THEN 'en' ELSE 'ru' END,
               cf.first_at - interval '10 seconds', cf.last_at
        FROM bench_cf cf
        """,
        {
            "ct0": ct0,
            "cid0": cid0,
            "big_name": TRANSCRIPT_CONTACT_NAME,
            "names": FIRST_NAMES,
            "name_count": len(FIRST_NAMES),
        },
    )
    cur.execute(
        """
        INSERT INTO chats_chat (id, widget_id, contact_id, channel, status, agent_id, department_id, is_internal,
                                accepted_by_id, accepted_by_type, accepted_at, handled_by_id, handled_by_type,
                                handled_at, handling, went_ai_to_human, went_human_to_ai, last_message_id,
                                last_message_at, has_client_messages, first_agent_reply_at, last_typing_at,
                                created_at, updated_at, closed_at)
        SELECT x.chat_id, x.widget_id, %(ct0)s + x.chat_no, x.channel, x.status, x.agent_id, NULL, false,
               x.agent_id, CASE WHEN x.agent_id IS NULL THEN '' ELSE 'human' END, x.first_reply_at,
               x.agent_id, CASE WHEN x.agent_id IS NULL THEN '' ELSE 'human' END, x.first_reply_at,
               CASE WHEN x.agent_id IS NULL THEN 'missed'
                    WHEN x.ai_replied AND mod(x.hc >> 20, 3) = 0 THEN 'ai_to_human'
                    ELSE 'human' END,
               x.agent_id IS NOT NULL AND x.ai_replied AND mod(x.hc >> 20, 3) = 0, false,
               x.last_id, x.last_at, x.has_client, x.first_reply_at, NULL,
               x.first_at - interval '5 seconds',
               CASE WHEN x.status = 'expired' THEN x.last_at + interval '7 minutes' ELSE x.last_at END,
               CASE WHEN x.status = 'expired' THEN x.last_at + interval '7 minutes' END
        FROM (
            SELECT cf.*,
                   CASE WHEN cf.first_reply_at IS NULL THEN NULL
                        ELSE w.agent_ids[1 + mod(cf.chat_no, array_length(w.agent_ids, 1))] END AS agent_id,
                   CASE WHEN cf.chat_no = 0 THEN 'active'
                        WHEN mod(cf.hc, 100) < 3 THEN 'spam'
                        WHEN mod(cf.hc, 100) < 13 THEN 'active'
                        WHEN mod(cf.hc, 100) < 18 THEN 'ready'
                        ELSE 'expired' END AS status,
                   CASE WHEN cf.chat_no = 0 THEN 'widget'
                        WHEN mod(cf.hc >> 24, 20) < 2 THEN 'telegram'
                        WHEN mod(cf.hc >> 24, 20) = 2 THEN 'whatsapp'
                        WHEN mod(cf.hc >> 24, 20) = 3 THEN 'ch1'
                        ELSE 'widget' END AS channel
            FROM bench_cf cf JOIN bench_w w ON w.widget_id = cf.widget_id
        ) x
        """,
        {"ct0": ct0},
    )


def main() -> int:
    from bench.lib.env import migrations_pending, postgres_problem

    problem = postgres_problem()
    if problem:
        print(f"seed: refused: {problem}")
        return 2
    if migrations_pending():
        print("seed: refused: unapplied migrations; run `manage.py migrate` on DATABASE_URL first")
        return 2
    started = time.monotonic()
    scale = ensure_seeded()
    print(f"seed: scale {scale} ready after {time.monotonic() - started:.0f} s")
    return 0
