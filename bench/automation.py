"""Automation rules (apps.automation): the worker time of a widget's rules per visitor message, and
what the rules cost the web process. Needs PostgreSQL (DATABASE_URL).

Data set (in a widget of its own that the next run replaces): BENCH_AUTOMATION_RULES enabled rules
(default 50) on `message.created`, each with two or three conditions over the fields owners use
(channel, language, the message's text by `contains` and by `matches`, the chat's labels, a contact
attribute, the page address), none of which hold for the benchmark's visitor (a matching rule's
actions cost what the same changes cost by hand: the chats' benchmarks measure those); one chat
with its contact, three labels and a visitor session, and a visitor message.

- `automation_rules_per_message`: one iteration is the worker's task for one visitor message
  (`runtime.run_event`: the rule-set version, the message with its chat and contact, the chat's
  labels, the contact's page, every rule's conditions, the evaluation logged in one row; the log's
  trim is a beat job, off this path). The rules were compiled by the warm-up (once per version, as on a
  worker). Target: p50 at most 2 ms.
- `automation_request_path`: the statements the rules' handler adds to the request that stores a
  visitor's message (its emit-time check, which reads the events the rules react to from the widget
  config's cache, and the after-commit hand-off, the broker call replaced by a no-op), with that
  cache filled as every request after the first since a rule's write finds it. Target: none.

Medians and p99 over BENCH_ITERATIONS iterations (default 300).
"""

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.lib.common import env_int, skipped  # noqa: E402
from bench.lib.env import migrations_pending, postgres_problem, setup_django  # noqa: E402
from bench.lib.targets import bench, info  # noqa: E402

NAME = "automation"
WIDGET_NAME = "bench-automation"
OWNER_EMAIL = "bench-automation@bench.invalid"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _conditions(i: int) -> list[dict]:
    """Two or three conditions a rule of an owner would have; the visitor below meets none."""
    shapes = [
        [
            {"field": "channel", "op": "equals", "value": "telegram"},
            {"field": "language", "op": "in", "value": ["fr", "it"]},
        ],
        [
            {"field": "message.text", "op": "matches", "value": rf"(?i)\b(refund|money back|chargeback{i})\b"},
            {"field": "channel", "op": "not_equals", "value": "widget"},
        ],
        [{"field": "message.text", "op": "contains", "value": f"cancel order {i}"}],
        [
            {"field": "labels", "op": "equals", "value": "Spam"},
            {"field": "message.text", "op": "starts_with", "value": "http"},
        ],
        [
            {"field": "contact.attributes.plan", "op": "equals", "value": "enterprise"},
            {"field": "page_url", "op": "contains", "value": f"/pricing/{i}"},
            {"field": "message.text", "op": "matches", "value": r"\b[A-Z]{3}-\d{6}\b"},
        ],
    ]
    return shapes[i % len(shapes)]


def _data(rules: int):
    from apps.automation import services
    from apps.chats import services as chat_services
    from apps.chats.models import Chat, Contact, Message, VisitorSession
    from apps.core.models import Widget
    from apps.core.services import create_widget

    for old in Widget.objects.filter(name=WIDGET_NAME):
        old.delete()
    widget = create_widget(owner_email=OWNER_EMAIL, name=WIDGET_NAME)
    for name in ("Spam", "VIP", "Billing"):
        chat_services.create_label(widget=widget, name=name)
    for i in range(rules):
        services.create_rule(
            widget=widget,
            name=f"Rule {i}",
            event="message.created",
            conditions=_conditions(i),
            actions=[{"type": "add_labels", "labels": ["VIP"]}, {"type": "close"}],
        )
    contact = Contact.objects.create(widget=widget, name="Bench", locale="en", attributes={"plan": "basic"})
    VisitorSession.objects.create(
        widget=widget,
        contact=contact,
        token_hash="bench-automation".ljust(64, "0"),
        page_url="https://shop.example/cart",
    )
    chat = Chat.objects.create(widget=widget, contact=contact, channel="widget")
    chat_services.add_chat_labels(widget=widget, chat=chat, names=["Billing"], by="agent")
    message = Message.objects.create(
        widget=widget,
        chat=chat,
        body="Hello, where is my parcel? I ordered it last week and it has not arrived yet.",
        author_kind=Message.Author.CLIENT,
    )
    return widget, chat, message


def bench_rules(widget, chat, message, *, rules: int, iterations: int, warmup: int) -> None:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from apps.automation import runtime

    data = {"chat_id": chat.pk, "message_id": message.pk, "source": "visitor"}
    for _ in range(warmup):
        runtime.run_event(widget_id=widget.pk, event_type="message.created", data=data)
    timings, cpu, round_trips = [], [], []
    for _ in range(iterations):
        start, start_cpu = time.perf_counter(), time.process_time()
        logged = runtime.run_event(widget_id=widget.pk, event_type="message.created", data=data)
        timings.append((time.perf_counter() - start) * 1000)
        cpu.append((time.process_time() - start_cpu) * 1000)
        start = time.perf_counter()
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        round_trips.append((time.perf_counter() - start) * 1000)
    assert len(logged.rule_ids) == rules and not logged.results, "the rules must not match"
    with CaptureQueriesContext(connection) as queries:
        runtime.run_event(widget_id=widget.pk, event_type="message.created", data=data)
    info(f"{NAME}_rules_per_message.statements", statements=len(queries.captured_queries), rules=rules)
    # what the figure is made of on this machine: the worker's own CPU, and one round trip to the
    # database (a `SELECT 1`) measured between the iterations
    info(f"{NAME}_rules_per_message.cpu", p50=statistics.median(cpu), unit="ms")
    info(f"{NAME}_rules_per_message.round_trip", p50=statistics.median(round_trips), unit="ms")
    bench(
        f"{NAME}_rules_per_message",
        unit="ms",
        target="p50<=2",
        p50=statistics.median(timings),
        p99=percentile(timings, 0.99),
        rules=rules,
        iterations=iterations,
    )


def bench_request_path(widget, chat, message) -> None:
    from django.db import connection, transaction
    from django.test.utils import CaptureQueriesContext

    from apps.automation import handlers, selectors
    from apps.core import events

    sent = []
    handlers._send = sent.append  # the broker call: not a statement, and no worker runs here
    event = events.Event(
        widget=widget,
        type=events.MESSAGE_CREATED,
        data={
            "chat_id": chat.pk,
            "message_id": message.pk,
            "client_id": chat.contact.guid,
            "author_type": "USER",
            "source": "visitor",
        },
    )
    selectors.rule_events(widget)  # the first reader since the rules' last write fills the cache
    # the message's transaction: the handler's check at emit, its hand-off at the commit; the same
    # transaction without the handler is the floor (its BEGIN and COMMIT)
    with CaptureQueriesContext(connection) as floor:
        with transaction.atomic():
            connection.cursor().execute("SELECT 1")
    with CaptureQueriesContext(connection) as ours:
        with transaction.atomic():
            connection.cursor().execute("SELECT 1")
            handlers.hand_off(event)
    assert len(sent) == 1, "the hand-off must run after the commit"
    added = len(ours) - len(floor)
    bench(f"{NAME}_request_path", unit="statements", target="statements==0", statements=added)


def main() -> int:
    problem = postgres_problem()
    if problem:
        skipped(NAME, problem)
        return 0
    setup_django()
    if migrations_pending():
        print(f"BENCH {NAME} FAILED (unapplied migrations: run `manage.py migrate` on DATABASE_URL first)", flush=True)
        return 1
    rules = env_int("BENCH_AUTOMATION_RULES", 50)
    widget, chat, message = _data(rules)
    bench_rules(
        widget,
        chat,
        message,
        rules=rules,
        iterations=env_int("BENCH_ITERATIONS", 300),
        warmup=env_int("BENCH_WARMUP", 20),
    )
    bench_request_path(widget, chat, message)
    # A missed target is not a failed run: bench.lib.targets gives the verdict from the BENCH lines.
    return 0


if __name__ == "__main__":
    sys.exit(main())
