"""Routing (apps.routing): a freed slot filled with every queued visitor's new place, one assignment
decision, and the SLA beat pass against the open chats. Needs PostgreSQL (DATABASE_URL).

Data set (built here in bulk, INSERT ... SELECT over generate_series, in a widget of its own that
the next run replaces): BENCH_ROUTING_OPERATORS operators (default 200) online (the presence hook,
apps.agents.selectors.PRESENCE_SOURCE), each holding BENCH_ROUTING_CAPACITY open chats (default 5,
the widget's capacity: everyone full), BENCH_ROUTING_QUEUED chats waiting in the queue (default
1,000), round robin; and, for the SLA pass, BENCH_ROUTING_SLA_CHATS open chats (default 100,000) of
a second widget, each with a running first-response clock due tomorrow.

- `routing_slot_filled`: one iteration frees a slot (an operator's oldest chat ends, written
  directly: no handler runs) and puts one more chat at the queue's tail, untimed; then, timed, the
  queue is served the way a closed chat's handler serves it (`services.serve`), its transaction
  commits (the on-commit handlers of chat.assigned and routing.queue_changed run here: whatever
  pushes the queued visitors' new places), and every queued chat's place and estimated wait are
  read (the whole queue in order and the widget's wait per place). Target: p99 under 1 s.
- `routing_decision`: the same decision timed alone, inside the transaction (its in-transaction
  handlers included: the chat, its routing row, the statistics), with the statements a warm one runs
  (its widget's routing settings and automation rules cached). A decision is taken in the process
  whose change freed the slot, the web process first of all, so the slots are timed in a process
  set up as that one is: config.asgi imported (its start-up objects frozen out of the garbage
  collector's reach) and the server's collector thresholds.
  Target: p99 at most 20 ms. The statement count is pinned by
  apps/routing/tests/test_routing_statements.py.
- `routing_sla_tick`: every routing beat job of config.celery.BEAT_SCHEDULE run once, with
  BENCH_ROUTING_SLA_DUE clocks due (default 5, reset between runs) among the 100,000 running ones
  (ours) and with the 100,000 stopped (the floor): the pass costs the same statements and about the
  same time whatever the open chats. Target: no extra statement, ratio at most 2.
- `routing_sla_due_read`: the due clocks' read on the partial index `sla_clock_running` (EXPLAIN
  ANALYZE): rows read at most the due ones.

Medians and p99 over BENCH_ITERATIONS iterations (default 200; SLA: BENCH_ROUTING_SLA_RUNS, default 20).
"""

import gc
import statistics
import sys
import time
from contextlib import nullcontext
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.lib.common import env_int, skipped  # noqa: E402
from bench.lib.env import migrations_pending, postgres_problem, setup_django  # noqa: E402
from bench.lib.targets import bench, info  # noqa: E402

NAME = "routing"
WIDGET_NAME = "bench-routing"
SLA_WIDGET_NAME = "bench-routing-sla"
OWNER_EMAIL = "bench-routing@bench.invalid"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _fresh_widget(name: str):
    from django.db import connection

    from apps.core.models import Widget
    from apps.core.services import create_widget

    for old in Widget.objects.filter(name=name):
        # The bulk rows go in SQL first (the ORM's cascade would collect 100,000 chats in memory).
        with connection.cursor() as cur:
            for table in (
                "routing_slaclock",
                "routing_chatrouting",
                "stats_chatfacts",
                "stats_assignmentfact",
                "core_outboxevent",
                "chats_chat",
                "chats_contact",
            ):
                cur.execute(f"DELETE FROM {table} WHERE widget_id = %s", (old.pk,))  # noqa: S608 - our table names
        old.delete()
    return create_widget(owner_email=OWNER_EMAIL, name=name)


def _insert_chats(cur, *, widget_id: int, count: int, agent_ids: list[int] | None, tag: str) -> tuple[int, int]:
    """`count` open widget chats (each with a contact and statistics facts), owned round robin by
    `agent_ids` (None: nobody), created a second apart ending now. Returns the first and last id."""
    cur.execute("SELECT coalesce(max(id), 0) + 1 FROM chats_chat")
    cid0 = cur.fetchone()[0]
    cur.execute("SELECT coalesce(max(id), 0) + 1 FROM chats_contact")
    ct0 = cur.fetchone()[0]
    params = {"w": widget_id, "n": count, "cid0": cid0, "ct0": ct0, "tag": tag, "agents": agent_ids or [None]}
    cur.execute(
        """
        INSERT INTO chats_contact (id, widget_id, guid, name, email, phone, attributes, locale, created_at, updated_at)
        SELECT %(ct0)s + g, %(w)s, md5('bench-routing:' || %(tag)s || ':' || %(ct0)s || ':' || g), 'Visitor', '', '',
               '{}'::jsonb, 'en', now() - (%(n)s - g) * interval '1 second', now()
        FROM generate_series(0, %(n)s - 1) AS g
        """,
        params,
    )
    cur.execute(
        """
        INSERT INTO chats_chat (id, widget_id, contact_id, channel, status, agent_id, is_internal, accepted_by_type,
                                handled_by_type, handling, went_ai_to_human, went_human_to_ai, has_client_messages,
                                created_at, updated_at)
        SELECT %(cid0)s + g, %(w)s, %(ct0)s + g, 'widget', 'active',
               (%(agents)s::bigint[])[1 + mod(g, array_length(%(agents)s::bigint[], 1))], false, '', '', 'missed',
               false, false, true, now() - (%(n)s - g) * interval '1 second', now()
        FROM generate_series(0, %(n)s - 1) AS g
        """,
        params,
    )
    cur.execute(
        """
        INSERT INTO stats_chatfacts (chat_id, widget_id, created_at, day, channel, is_internal, handling,
                                     went_ai_to_human, went_human_to_ai, accepted_type, handled_type, contact_id,
                                     contact_guid, messages, reroutes)
        SELECT c.id, c.widget_id, c.created_at, (c.created_at AT TIME ZONE 'Europe/Moscow')::date, c.channel, false,
               'missed', false, false, '', '', c.contact_id, '', 1, 0
        FROM chats_chat c WHERE c.id >= %(cid0)s AND c.id < %(cid0)s + %(n)s
        """,
        params,
    )
    for table in ("chats_chat", "chats_contact"):
        cur.execute(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), (SELECT max(id) FROM {table}))")
    return cid0, cid0 + count - 1


def _routing_data(operators: int, capacity: int, queued: int):
    from django.db import connection, transaction

    from apps.agents.models import Agent
    from apps.routing.models import RoutingSettings

    started = time.monotonic()
    with transaction.atomic():
        widget = _fresh_widget(WIDGET_NAME)
        agents = Agent.objects.bulk_create(
            Agent(widget=widget, name=f"Operator {n}", email=f"op{n}@bench-routing.invalid") for n in range(operators)
        )
        agent_ids = [a.pk for a in agents]
        RoutingSettings.objects.create(widget=widget, mode="round_robin", default_capacity=capacity)
        with connection.cursor() as cur:
            _insert_chats(cur, widget_id=widget.pk, count=operators * capacity, agent_ids=agent_ids, tag="held")
            first, last = _insert_chats(cur, widget_id=widget.pk, count=queued, agent_ids=None, tag="queued")
            cur.execute(
                """
                INSERT INTO routing_chatrouting (chat_id, widget_id, queued_at, queue_since, assigned_by, reroutes,
                                                 timed_out, updated_at)
                SELECT id, widget_id, created_at, created_at, '', 0, '[]'::jsonb, now()
                FROM chats_chat WHERE id BETWEEN %s AND %s
                """,
                (first, last),
            )
    with connection.cursor() as cur:
        cur.execute("ANALYZE")
    print(
        f"{NAME}: {operators} operators x {capacity} held chats, {queued} queued, "
        f"built in {time.monotonic() - started:.1f} s",
        flush=True,
    )
    return widget, agent_ids


def _free_a_slot(widget, agent_id: int) -> None:
    """The operator's oldest open chat ends, written directly (no handler serves the queue), and one
    more chat joins the queue's tail."""
    from django.db import connection
    from django.utils import timezone

    from apps.chats.models import Chat
    from apps.routing.models import ChatRouting

    oldest = Chat.objects.filter(widget=widget, agent_id=agent_id, status=Chat.Status.ACTIVE).order_by("pk").first()
    Chat.objects.filter(pk=oldest.pk).update(status=Chat.Status.EXPIRED, closed_at=timezone.now())
    with connection.cursor() as cur:
        chat_id, _ = _insert_chats(cur, widget_id=widget.pk, count=1, agent_ids=None, tag=f"tail{oldest.pk}")
    now = timezone.now()
    ChatRouting.objects.create(chat_id=chat_id, widget_id=widget.pk, queued_at=now, queue_since=now, updated_at=now)


def _positions(widget) -> list[tuple[int, int, int | None]]:
    """Every queued chat's (id, place, estimated wait): what the visitors are told."""
    from apps.routing import selectors

    per_place = selectors.estimated_wait_per_place(widget)
    return [
        (chat_id, place, round(place * per_place) if per_place is not None else None)
        for place, (chat_id, _since) in enumerate(selectors.queue(widget), start=1)
    ]


def bench_slot(widget, agent_ids: list[int], iterations: int, warmup: int) -> None:
    from django.db import connection, transaction
    from django.test.utils import CaptureQueriesContext

    from apps.routing import services

    cycle, decision, statements = [], [], []
    queued = len(_positions(widget))
    for i in range(warmup + iterations):
        _free_a_slot(widget, agent_ids[i % len(agent_ids)])
        # The statements are counted in the warm-up only: capturing them (Django's debug cursor
        # renders every statement's SQL) is a cost production never pays, so timed runs go without.
        # The first decision also reads the widget's routing settings and automation rules into
        # their caches; the figure is a warm decision's (the most of the other warm-up ones).
        counting = i < warmup
        connection.queries_log.clear()  # a full log (9,000 statements) would count none
        with CaptureQueriesContext(connection) if counting else nullcontext() as queries:
            t0 = time.perf_counter()
            with transaction.atomic():
                assigned = services.serve(widget, limit=1)
                t1 = time.perf_counter()
                if counting:
                    statements.append(len(queries.captured_queries))
            # committed: chat.assigned's and routing.queue_changed's on-commit handlers have run
            places = _positions(widget)
            t2 = time.perf_counter()
        if assigned != 1 or len(places) != queued:
            print(f"BENCH {NAME}_slot_filled FAILED (assigned {assigned}, {len(places)} queued, not {queued})")
            return
        if i >= warmup:
            cycle.append((t2 - t0) * 1000)
            decision.append((t1 - t0) * 1000)
    bench(
        f"{NAME}_slot_filled",
        unit="ms",
        target="p99<1000",
        ours=statistics.median(cycle),
        p99=percentile(cycle, 0.99),
        queued=queued,
        operators=len(agent_ids),
        n=iterations,
    )
    bench(
        f"{NAME}_decision",
        unit="ms",
        target="p99<=20",
        ours=statistics.median(decision),
        p99=percentile(decision, 0.99),
        statements=max(statements[1:] or statements),
        n=iterations,
    )


# --- SLA -----------------------------------------------------------------------------------------------------


def _sla_data(chats: int):
    from django.db import connection, transaction

    from apps.core.models import Widget
    from apps.routing.models import SlaClock

    started = time.monotonic()
    widget = Widget.objects.filter(name=SLA_WIDGET_NAME).first()
    if widget is not None and SlaClock.objects.filter(widget=widget).count() == chats:
        # The last run's chats: their clocks run again (deleting 100,000 chats costs minutes of checks).
        with connection.cursor() as cur:
            cur.execute(
                """
                UPDATE routing_slaclock SET due_at = now() + interval '1 day' + chat_id * interval '1 ms',
                       stopped_at = NULL, met = NULL, breached_at = NULL
                WHERE widget_id = %s
                """,
                (widget.pk,),
            )
            cur.execute("SELECT min(chat_id), max(chat_id) FROM routing_slaclock WHERE widget_id = %s", (widget.pk,))
            first, last = cur.fetchone()
            cur.execute("VACUUM ANALYZE routing_slaclock")
        print(f"{NAME}: {chats} open chats' SLA clocks running again in {time.monotonic() - started:.1f} s", flush=True)
        return widget, first, last
    with transaction.atomic():
        widget = _fresh_widget(SLA_WIDGET_NAME)
        with connection.cursor() as cur:
            first, last = _insert_chats(cur, widget_id=widget.pk, count=chats, agent_ids=None, tag="sla")
            cur.execute(
                """
                INSERT INTO routing_slaclock (widget_id, chat_id, policy_id, kind, started_at, due_at)
                SELECT widget_id, id, NULL, 'first_response', created_at,
                       now() + interval '1 day' + id * interval '1 ms'
                FROM chats_chat WHERE id BETWEEN %s AND %s
                """,
                (first, last),
            )
    with connection.cursor() as cur:
        cur.execute("ANALYZE")
    print(f"{NAME}: {chats} open chats with running SLA clocks built in {time.monotonic() - started:.1f} s", flush=True)
    return widget, first, last


def _routing_beat_jobs():
    from django.utils.module_loading import import_string

    from config.celery import BEAT_SCHEDULE

    return {
        name: import_string(task) for name, (task, _every) in BEAT_SCHEDULE.items() if task.startswith("apps.routing.")
    }


def _make_due(widget, first: int, due: int) -> None:
    """`due` clocks (of the first chats) ran out a minute ago and are untouched; the rest run."""
    from django.utils import timezone

    from apps.routing.models import SlaClock

    now = timezone.now()
    # The ones an earlier run made due run again (a range of the running clocks' index).
    for clock in SlaClock.objects.filter(widget=widget, due_at__lte=now).only("pk"):
        SlaClock.objects.filter(pk=clock.pk).update(due_at=now + timedelta(days=1, milliseconds=clock.pk))
    clocks = SlaClock.objects.filter(widget=widget, chat_id__lt=first + due)
    clocks.update(due_at=now - timedelta(minutes=1), breached_at=None, stopped_at=None, met=None)


def _tick(jobs, runs: int, widget, first: int, due: int) -> tuple[float, int]:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    times, statements = [], []
    for _ in range(runs):
        _make_due(widget, first, due)
        connection.queries_log.clear()
        with CaptureQueriesContext(connection) as queries:
            t0 = time.perf_counter()
            for job in jobs.values():
                job()
            times.append((time.perf_counter() - t0) * 1000)
        statements.append(len(queries.captured_queries))
    return statistics.median(times), max(statements)


def bench_sla(chats: int, due: int, runs: int) -> None:
    from django.utils import timezone

    from apps.routing.models import SlaClock
    from bench.lib.checks import rows_examined

    widget, first, last = _sla_data(chats)
    jobs = _routing_beat_jobs()
    print(f"{NAME}: routing beat jobs: {', '.join(jobs)}", flush=True)
    _tick(jobs, 1, widget, first, due)  # warm-up: what a beat process reads once (its caches) is read here
    ours_ms, ours_statements = _tick(jobs, runs, widget, first, due)
    for few in (0, due * 10):
        ms, count = _tick(jobs, max(runs // 4, 3), widget, first, few)
        info(f"{NAME}_sla_tick.due{few}", ms=ms, statements=count, open=chats)
    _make_due(widget, first, due)
    read = SlaClock.objects.filter(
        stopped_at__isnull=True, breached_at__isnull=True, due_at__lte=timezone.now()
    ).order_by("due_at")[:500]
    sql, params = read.query.sql_with_params()
    examined, nodes = rows_examined(sql, params, SlaClock._meta.db_table)
    print(f"{NAME}: the due clocks' read: {'; '.join(nodes)}", flush=True)
    # The floor: the same due clocks with none of the others running (stopped in bulk).
    running = SlaClock.objects.filter(widget=widget, chat_id__gte=first + due, stopped_at__isnull=True)
    running.update(stopped_at=timezone.now(), met=True)
    floor_ms, floor_statements = _tick(jobs, runs, widget, first, due)
    bench(
        f"{NAME}_sla_tick",
        unit="ms",
        target="extra_statements<=0,ratio<=2",
        ours=ours_ms,
        floor=floor_ms,
        ratio=ours_ms / floor_ms if floor_ms else 1.0,
        statements=ours_statements,
        floor_statements=floor_statements,
        extra_statements=ours_statements - floor_statements,
        due=due,
        open=chats,
    )
    bench(
        f"{NAME}_sla_due_read",
        unit="rows",
        target="extra_rows<=0",
        ours=examined,
        due=due,
        extra_rows=examined - due,
        open=chats,
    )


def main() -> int:
    problem = postgres_problem()
    if problem:
        skipped(NAME, problem)
        return 0
    setup_django()
    if migrations_pending():
        print(f"BENCH {NAME} FAILED (unapplied migrations: run `manage.py migrate` on DATABASE_URL first)", flush=True)
        return 1
    from apps.agents import selectors as agent_selectors

    operators = env_int("BENCH_ROUTING_OPERATORS", 200)
    capacity = env_int("BENCH_ROUTING_CAPACITY", 5)
    queued = env_int("BENCH_ROUTING_QUEUED", 1000)
    iterations = env_int("BENCH_ITERATIONS", 200)
    widget, agent_ids = _routing_data(operators, capacity, queued)
    online = set(agent_ids)
    agent_selectors.PRESENCE_SOURCE = lambda w: online if w.pk == widget.pk else set()
    import config.asgi

    gc.set_threshold(*config.asgi.SERVER_GC_THRESHOLDS)
    bench_slot(widget, agent_ids, iterations, warmup=env_int("BENCH_WARMUP", 20))

    from apps.routing.models import ChatRouting

    # The SLA pass alone: this widget's queue no longer waits (the beat pass would serve it).
    ChatRouting.objects.filter(widget=widget).update(queue_since=None)
    bench_sla(
        env_int("BENCH_ROUTING_SLA_CHATS", 100_000),
        env_int("BENCH_ROUTING_SLA_DUE", 5),
        env_int("BENCH_ROUTING_SLA_RUNS", 20),
    )
    # A missed target is not a failed run: bench.lib.targets gives the verdict from the BENCH lines.
    return 0


if __name__ == "__main__":
    sys.exit(main())
