"""The operator console's chat list at 100,000 chats, as an operator's browser asks for it.

A widget of its own (WIDGET_NAME) holds CHATS chats: contacts with and without names (some with
only an e-mail or a phone), ACTIVE_EVERY-th chat open (`active`, the newest), the rest `expired`;
OPERATORS human operators owning 70% of the chats (the rest unassigned); three messages per chat
with last_message set; a handful of visitor sessions. A neighbour widget (NEIGHBOUR_CHATS of the
same shape) shares the tables, so a plan that is not tenant-first shows. Both are made once with
bulk inserts and kept: the widget is the marker and its chat count the check, so a second run
measures at once.

The service under uvicorn (bench.lib.common.Server, one process); the driver signs in through the
console's login form (a Django session cookie) as one of the operators and asks, over keep-alive
HTTP, for the full page GET /console/ and for the list fragment (the same URL with
`HX-Request: true`) of each view: `view=mine`, `view=unassigned`, `view=all` (open chats) and
`view=all&status=any` (every state), that one also with a search `q=` (a rare word, and a two-letter
text). p50 and p99 of each over BENCH_ITERATIONS requests (default 100) after BENCH_WARMUP (10).
Target: p50 at most 50 ms for each.

The floor is the database work of the same request alone: the statements the view issues (captured
in this process by running the view under Django's test client) replayed in one transaction from
this process. Before timing, the run prints per kind the statements, rows and bytes, whether the
server honours `view` (a console that ignores it answers every view with the same list), and the
EXPLAIN ANALYZE of the slowest statements.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import secrets
import sys
import time
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.lib.common import Server, bench_line, env_int, expect, session, skipped  # noqa: E402
from bench.lib.env import migrations_pending, postgres_problem, setup_django  # noqa: E402
from bench.lib.targets import info  # noqa: E402

NAME = "console_list"
WIDGET_NAME = "bench-console-list"
NEIGHBOUR_NAME = "bench-console-list-neighbour"
SHAPE = "console list data v2"  # the main widget's account name: a change of the data below bumps it
CHATS = 100_000
NEIGHBOUR_CHATS = 20_000
ACTIVE_EVERY = 200  # 500 open chats of 100,000
OPERATORS = 6
VISITOR_SESSIONS = 5
BATCH = 5000
TARGET_P50_MS = 50
RARE_WORD = "refund"  # in one chat of 1,000
SHORT_TEXT = "ok"  # two letters: no trigram of the index can narrow it
# The status filter's "every state" (a console without that choice drops an unknown status: every state too).
EVERY_STATE = "any"
PLANS_SHOWN = 2  # EXPLAIN ANALYZE of the slowest statements of each kind

NAMES = ["Anna", "", "Ivan", "Maria", "", "John", "Emily", "", "Olga", "Michael", "Sarah", "Dmitry", ""]
CLIENT_TEXT = [
    "Hello, where is my order {n}?",
    "Good afternoon, the payment for invoice {n} did not go through",
    "Can I change the delivery address of order {n}?",
    "Hi! Is the blue one in stock?",
    "The tracking number {n} shows nothing",
]
AGENT_TEXT = ["Let me check that for you.", "It ships today.", "Thank you, I have passed it on to the courier."]
FOLLOW_UP = ["Thanks, that helps", "Great, thank you", "Still waiting for the parcel", "ok, thanks!"]

KINDS = [
    ("page", {}, False),
    ("mine", {"view": "mine"}, True),
    ("unassigned", {"view": "unassigned"}, True),
    ("all", {"view": "all"}, True),
    ("every_state", {"view": "all", "status": EVERY_STATE}, True),
    ("search", {"view": "all", "status": EVERY_STATE, "q": RARE_WORD}, True),
    ("search_short", {"view": "all", "status": EVERY_STATE, "q": SHORT_TEXT}, True),
]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return float(ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))])


# --- data ------------------------------------------------------------------------------------------


def _fill(widget, count: int, operators: list) -> None:
    """`count` contacts, chats and three messages a chat, in batches; then each chat's last message."""
    from django.db import connection
    from django.utils import timezone

    from apps.chats.models import Chat, Contact, Message

    now = timezone.now()
    start = now - timedelta(days=365)
    step = timedelta(seconds=360 * 86400 / count)
    for first in range(0, count, BATCH):
        numbers = range(first, min(first + BATCH, count))
        contacts = Contact.objects.bulk_create(
            Contact(
                widget=widget,
                name=NAMES[n % len(NAMES)],
                email=f"visitor{n}@example.com" if n % 3 == 0 else "",
                phone=f"+7900{n:07d}" if n % 5 == 0 else "",
            )
            for n in numbers
        )
        chats, opened = [], []
        for n, contact in zip(numbers, contacts, strict=True):
            active = n % ACTIVE_EVERY == 0
            # Open chats are the newest (their last message within the last few hours), as they are live.
            created = now - timedelta(minutes=5 + n // ACTIVE_EVERY % 300) if active else start + step * n
            # Open chats and closed ones each spread over the operators and the queue (30% unassigned).
            k = n // ACTIVE_EVERY if active else n
            agent = operators[k % len(operators)] if k % 10 < 7 else None
            opened.append(created)
            chats.append(
                Chat(
                    widget=widget,
                    contact=contact,
                    channel="telegram" if n % 9 == 0 else "widget",
                    status=Chat.Status.ACTIVE if active else Chat.Status.EXPIRED,
                    agent=agent,
                    handling=Chat.Handling.HUMAN if agent else Chat.Handling.MISSED,
                    accepted_by=agent,
                    accepted_by_type="human" if agent else "",
                    has_client_messages=True,
                    first_agent_reply_at=created + timedelta(seconds=30) if agent else None,
                    last_message_at=created + timedelta(minutes=2),
                    created_at=created,
                    updated_at=created + timedelta(minutes=2),
                    closed_at=None if active else created + timedelta(minutes=9),
                )
            )
        chats = Chat.objects.bulk_create(chats)
        messages = []
        for n, chat, created in zip(numbers, chats, opened, strict=True):
            first_text = CLIENT_TEXT[n % len(CLIENT_TEXT)].format(n=n)
            if n % 1000 == 7:
                first_text += f" and I would like a {RARE_WORD}"
            second = (
                (AGENT_TEXT[n % len(AGENT_TEXT)], Message.Author.AGENT, chat.agent)
                if chat.agent
                else ("Is anyone there?", Message.Author.CLIENT, None)
            )
            for offset, (body, kind, agent) in enumerate(
                ((first_text, Message.Author.CLIENT, None), second, (FOLLOW_UP[n % 4], Message.Author.CLIENT, None))
            ):
                messages.append(
                    Message(
                        widget=widget,
                        chat=chat,
                        body=body,
                        author_kind=kind,
                        agent=agent,
                        created_at=created + timedelta(minutes=offset),
                    )
                )
        last = {message.chat_id: message.pk for message in Message.objects.bulk_create(messages)}
        # The batch's pairs, not a join over the table: its fresh rows have no statistics yet.
        with connection.cursor() as cursor:
            cursor.execute(
                "UPDATE chats_chat c SET last_message_id = v.mid "
                "FROM unnest(%s::bigint[], %s::bigint[]) AS v(cid, mid) WHERE c.id = v.cid",
                [list(last), list(last.values())],
            )


def _widget_with_operators(name: str, count: int):
    from apps.agents.services import create_human_agent
    from apps.core.services import create_widget

    widget = create_widget(owner_email=f"{name}@bench.invalid", name=name)
    operators = [
        create_human_agent(widget=widget, email=f"{name}-operator-{i}@bench.invalid", name=f"Operator {i}")
        for i in range(1, OPERATORS + 1)
    ]
    _fill(widget, count, operators)
    return widget


def seed():
    """The console widget (made once; made again when its chat count is not CHATS) and its operator."""
    from django.db import connection, transaction
    from django.utils import timezone

    from apps.chats.models import Chat, Contact, VisitorSession
    from apps.core.models import Account, Widget

    existing = Widget.objects.select_related("account").filter(name=WIDGET_NAME).first()
    if existing is not None:
        made = Chat.objects.filter(widget=existing).count()
        if made == CHATS and existing.account.name == SHAPE and Widget.objects.filter(name=NEIGHBOUR_NAME).exists():
            return existing
        print(f"{NAME}: the console widget ({made} chats, {existing.account.name!r}) is made again", flush=True)
    old = list(Widget.objects.filter(name__in=[WIDGET_NAME, NEIGHBOUR_NAME]).values_list("pk", flat=True))
    # The rows made in bulk go in SQL (the ORM would collect them all); the rest by the ORM.
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("UPDATE chats_chat SET last_message_id = NULL WHERE widget_id = ANY(%s)", [old])
        for table in ("chats_message", "chats_visitorsession", "chats_chat", "chats_contact"):
            cursor.execute(f"DELETE FROM {table} WHERE widget_id = ANY(%s)", [old])
        Account.objects.filter(widgets__pk__in=old).delete()
    started = time.perf_counter()
    with transaction.atomic():
        _widget_with_operators(NEIGHBOUR_NAME, NEIGHBOUR_CHATS)
        widget = _widget_with_operators(WIDGET_NAME, CHATS)
        Account.objects.filter(pk=widget.account_id).update(name=SHAPE)
        contacts = Contact.objects.filter(widget=widget, chats__status=Chat.Status.ACTIVE)[:VISITOR_SESSIONS]
        VisitorSession.objects.bulk_create(
            VisitorSession(
                widget=widget,
                contact=contact,
                token_hash=hashlib.sha256(secrets.token_bytes(32)).hexdigest(),
                page_url=f"https://shop.example.com/p/{contact.pk}",
                last_seen_at=timezone.now(),
            )
            for contact in contacts
        )
    with connection.cursor() as cursor:
        for table in ("chats_chat", "chats_contact", "chats_message"):
            cursor.execute(f"VACUUM (ANALYZE) {table}")
    print(f"{NAME}: made {CHATS} + {NEIGHBOUR_CHATS} chats in {time.perf_counter() - started:.0f} s", flush=True)
    return widget


def the_operator(widget) -> tuple[str, str]:
    """(e-mail, a fresh password) of the operator the bench signs in as."""
    from apps.agents.models import Agent
    from apps.agents.services import set_console_password

    agent = Agent.objects.get(widget=widget, email=f"{WIDGET_NAME}-operator-1@bench.invalid")
    password = secrets.token_urlsafe(18)
    set_console_password(widget=widget, agent=agent, password=password)
    return agent.email, password


# --- the statements of a request -------------------------------------------------------------------


def captured(email: str) -> dict[str, list[str]]:
    """The SQL each kind's request issues, from the view run in this process (Django's test client,
    signed in as the operator); savepoints are left out (the replay runs in one transaction)."""
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    logging.getLogger("apps.request").setLevel(logging.WARNING)  # the server's log lines, not the bench's
    client = Client(HTTP_HOST="127.0.0.1")
    client.force_login(get_user_model().objects.get(email=email))
    out: dict[str, list[str]] = {}
    for kind, params, fragment in KINDS:
        headers = {"HX-Request": "true"} if fragment else {}
        client.get("/console/", params, headers=headers)  # the session's first touch is not the request's
        with CaptureQueriesContext(connection) as queries:
            response = client.get("/console/", params, headers=headers)
        assert response.status_code == 200, (kind, response.status_code)
        out[kind] = [q["sql"] for q in queries.captured_queries if not re.match(r"^(RELEASE )?SAVEPOINT", q["sql"])]
    client.logout()  # its session row goes
    return out


def replay(statements: list[str], iterations: int) -> tuple[float, list[tuple[float, str]]]:
    """Median ms of the statements run one after another in a transaction (rolled back), and each
    statement's median ms, slowest first."""
    from django.db import connection, transaction

    totals, each = [], [[] for _ in statements]
    for _ in range(iterations):
        with transaction.atomic(), connection.cursor() as cursor:
            started = time.perf_counter()
            local = None  # a SET LOCAL of the view holds for its own atomic block: the next statement
            for i, sql in enumerate(statements):
                t = time.perf_counter()
                cursor.execute(sql)
                if cursor.description is not None:
                    cursor.fetchall()
                each[i].append((time.perf_counter() - t) * 1000)
                if local:
                    cursor.execute(f"RESET {local}")
                setting = re.match(r"^SET LOCAL (\w+)", sql)
                local = setting[1] if setting else None
            totals.append((time.perf_counter() - started) * 1000)
            transaction.set_rollback(True)
    per = sorted(((percentile(v, 0.5), sql) for v, sql in zip(each, statements, strict=True)), reverse=True)
    return percentile(totals, 0.5), per


def explain(sql: str, statements: list[str]) -> str:
    """EXPLAIN ANALYZE of `sql` (under the SET LOCAL the view ran just before it, if any)."""
    from django.db import connection, transaction

    if sql.startswith("SET "):
        return ""
    with transaction.atomic(), connection.cursor() as cursor:
        before = statements[statements.index(sql) - 1] if statements.index(sql) else ""
        if before.startswith("SET LOCAL "):
            cursor.execute(before)
        cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql)
        plan = "\n".join(row[0] for row in cursor.fetchall())
        transaction.set_rollback(True)
    return plan


# --- over HTTP -------------------------------------------------------------------------------------


def sign_in(base: str, email: str, password: str):
    """A requests session holding the console's session cookie, signed in through the login form."""
    http = session()
    page = expect(http.get(f"{base}/console/login/")).text
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)[1]
    answer = http.post(
        f"{base}/console/login/",
        data={"email": email, "password": password, "csrfmiddlewaretoken": token},
        headers={"Referer": f"{base}/console/login/"},
        allow_redirects=False,
    )
    expect(answer, 302)
    return http


def timed(http, url: str, params: dict, headers: dict, iterations: int, warmup: int) -> tuple[list[float], bytes]:
    body = b""
    for _ in range(warmup):
        body = expect(http.get(url, params=params, headers=headers)).content
    samples = []
    for _ in range(iterations):
        started = time.perf_counter()
        expect(http.get(url, params=params, headers=headers))
        samples.append((time.perf_counter() - started) * 1000)
    return samples, body


def main() -> int:
    problem = postgres_problem()
    if problem:
        skipped(NAME, problem)
        return 0
    setup_django()
    if migrations_pending():
        print(f"BENCH {NAME} FAILED (unapplied migrations: run `manage.py migrate` on DATABASE_URL first)", flush=True)
        return 1
    iterations = env_int("BENCH_ITERATIONS", 100)
    warmup = env_int("BENCH_WARMUP", 10)
    widget = seed()
    email, password = the_operator(widget)
    print(f"{NAME}: widget {widget.pk}, {CHATS} chats, signed in as {email}", flush=True)

    statements = captured(email)
    floors = {}
    for kind, _, _ in KINDS:
        floor_ms, per = replay(statements[kind], max(10, iterations // 5))
        floors[kind] = floor_ms
        print(f"{kind}: {len(statements[kind])} statements, {floor_ms:.2f} ms together; slowest:", flush=True)
        for ms, sql in per[:PLANS_SHOWN]:
            print(f"  {ms:.2f} ms: {sql[:400]}", flush=True)
            plan = explain(sql, statements[kind]) if ms >= 1 else ""
            if plan:
                print("    " + plan.replace("\n", "\n    "), flush=True)

    rows_of = {}
    with Server(NAME) as server:
        http = sign_in(server.base, email, password)
        url = f"{server.base}/console/"
        results = {}
        for kind, params, fragment in KINDS:
            headers = {"HX-Request": "true"} if fragment else {}
            samples, body = timed(http, url, params, headers, iterations, warmup)
            rows_of[kind] = re.findall(rb'data-chat-id="([0-9]+)"', body)
            results[kind] = samples
            info(f"{NAME}_{kind}_shape", statements=len(statements[kind]), rows=len(rows_of[kind]), bytes=len(body))
        token = http.cookies.get("csrftoken")
        expect(
            http.post(
                f"{server.base}/console/logout/",
                data={"csrfmiddlewaretoken": token},
                headers={"Referer": f"{server.base}/console/"},
                allow_redirects=False,
            ),
            302,
        )
    honoured = rows_of["mine"] != rows_of["all"] or rows_of["unassigned"] != rows_of["all"]
    info(f"{NAME}_view_honoured", answer="yes" if honoured else "no(every_view_lists_the_same)")
    for kind, _, _ in KINDS:
        samples = results[kind]
        for label, q, target in (("p50", 0.5, f"ours<={TARGET_P50_MS}"), ("p99", 0.99, None)):
            ours = percentile(samples, q)
            bench_line(
                f"{NAME}_{kind}_{label}",
                ours=ours,
                floor=floors[kind],
                ratio=ours / floors[kind],
                target=target,
                unit="ms",
            )
    return 0


if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    sys.exit(main())
