"""The benchmarks' own machinery (bench/lib): targets are checked from the BENCH lines themselves, the
clean-up leaves a widget as it found it (statistics rollups included), and the floor views never ship.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection
from django.utils import timezone

from bench.lib import targets

ROOT = Path(__file__).resolve().parents[1]


# --- targets -------------------------------------------------------------------------------------------


def test_a_bench_line_carries_its_target_and_verdict(capsys):
    assert targets.bench("x", unit="ms", target="ratio<=2", ours=3.0, floor=2.0, ratio=1.5) is True
    assert (
        targets.bench(
            "y", unit="r/s", target="ratio>=0.6,p99<250,errors==0", ours=10, floor=20, ratio=0.5, p99=300, errors=0
        )
        is False
    )
    ok_line, miss_line = capsys.readouterr().out.splitlines()
    assert ok_line == "BENCH x ours=3 floor=2 ratio=1.5 unit=ms target=ratio<=2 ok"
    assert miss_line.startswith("BENCH y ") and miss_line.endswith("MISS(ratio=0.5 not >=0.6; p99=300 not <250)")


def test_a_target_is_required_on_a_bench_line():
    with pytest.raises(ValueError):
        targets.bench("x", unit="ms", target="", ours=1)
    with pytest.raises(ValueError):
        targets.bench("x", unit="ms", target="ratio is small", ours=1)


@pytest.mark.parametrize(
    ("line", "status"),
    [
        ("BENCH a ours=1 floor=2 ratio=0.5 unit=ms target=ratio<=2 ok", "ok"),
        ("BENCH a ours=9 floor=2 ratio=4.5 unit=ms target=ratio<=2 MISS(ratio=4.5 not <=2)", "miss"),
        # the verdict is recomputed from the figures: a line claiming ok for a miss is caught
        ("BENCH a ours=9 floor=2 ratio=4.5 unit=ms target=ratio<=2 ok", "inconsistent"),
        ("BENCH a ours=9 floor=2 ratio=4.5 target=-", "unchecked"),
        ("BENCH a ours=9 floor=2 ratio=4.5 ms", "unchecked"),
        ("BENCH a ours=1 unit=ms target=p99<250 MISS(p99=nan not <250)", "miss"),  # a missing figure misses
        ("BENCH a SKIPPED (DATABASE_URL is not set)", "skipped"),
        ("BENCH a FAILED (the server exited)", "failed"),
    ],
)
def test_each_bench_line_is_checked_again(line, status):
    assert targets.check_line(line).status == status


def test_the_checker_exits_non_zero_naming_the_misses_and_shows_the_spread(tmp_path, capsys):
    run1, run2 = tmp_path / "a.1.log", tmp_path / "a.2.log"
    run1.write_text(
        "noise\nINFO fanout ours=3\nBENCH a ours=1 floor=2 ratio=0.5 unit=ms target=ratio<=2 ok\n"
        "BENCH b ours=1 floor=1 ratio=1 unit=x target=ratio>=0.6 ok\n"
    )
    run2.write_text(
        "BENCH a ours=1.5 floor=2 ratio=0.75 unit=ms target=ratio<=2 ok\n"
        "BENCH b ours=0.5 floor=1 ratio=0.5 unit=x target=ratio>=0.6 MISS(ratio=0.5 not >=0.6)\n"
    )
    assert targets.main(["--spread", str(run1), str(run2)]) == 1
    out = capsys.readouterr().out
    assert "  a: ours=1..1.5 floor=2 ratio=0.5..0.75 unit=ms target=ratio<=2: met in 2 of 2 runs" in out
    assert "  b: ours=0.5..1 floor=1 ratio=0.5..1 unit=x target=ratio>=0.6: met in 1 of 2 runs" in out
    assert "4 BENCH lines: 3 ok, 1 missed" in out
    assert "MISS: b: MISS(ratio=0.5 not >=0.6)" in out
    assert targets.main([str(run1)]) == 0


def test_the_spread_skips_figures_that_are_no_number(tmp_path, capsys):
    """bench/widget.py prints floor=n/a: the spread once crashed on it (min() of no values)."""
    log = tmp_path / "widget.log"
    log.write_text("BENCH widget_size ours=740 floor=n/a ratio=n/a unit=bytes target=ours<=2048 ok\n")
    assert targets.main(["--spread", str(log)]) == 0
    assert "  widget_size: ours=740 unit=bytes target=ours<=2048: met in 1 of 1 runs" in capsys.readouterr().out


def test_make_bench_fails_naming_a_miss(tmp_path):
    # given a benchmark whose BENCH line misses its target (bench.sh runs bench/*.py: a copy of the
    # script in a scratch tree with that one benchmark)
    tree = tmp_path / "tree"
    (tree / "scripts").mkdir(parents=True)
    (tree / "bench" / "lib").mkdir(parents=True)
    (tree / "scripts" / "bench.sh").write_text((ROOT / "scripts" / "bench.sh").read_text())
    (tree / "bench" / "__init__.py").write_text("")
    (tree / "bench" / "lib" / "__init__.py").write_text("")
    (tree / "bench" / "lib" / "targets.py").write_text((ROOT / "bench" / "lib" / "targets.py").read_text())
    (tree / "bench" / "slow.py").write_text(
        "from bench.lib.targets import bench\nbench('slow', unit='ms', target='ratio<=2', ours=5, floor=1, ratio=5)\n"
    )
    (tree / "bench" / "fast.py").write_text(
        "from bench.lib.targets import bench\nbench('fast', unit='ms', target='ratio<=2', ours=1, floor=1, ratio=1)\n"
    )
    (tree / ".venv" / "bin").mkdir(parents=True)
    (tree / ".venv" / "bin" / "python").symlink_to(sys.executable)
    # when make bench runs them
    done = subprocess.run(["bash", "scripts/bench.sh"], cwd=tree, capture_output=True, text=True, timeout=120)
    # then it exits non-zero and names the miss, and passes the met target
    assert done.returncode == 1, done.stdout + done.stderr
    assert "MISS: slow: MISS(ratio=5 not <=2)" in done.stdout
    assert "targets missed" in done.stderr
    assert "fast: ours=1 floor=1 ratio=1 unit=ms target=ratio<=2: met in 1 of 1 runs" in done.stdout
    done = subprocess.run(
        ["bash", "scripts/bench.sh"],
        cwd=tree,
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ, BENCH_ONLY="fast"),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "every target met" in done.stdout


# --- the floor views never ship --------------------------------------------------------------------------


def test_the_production_url_conf_has_no_floor_view():
    from django.urls import get_resolver

    def paths(resolver, prefix=""):
        for pattern in resolver.url_patterns:
            if hasattr(pattern, "url_patterns"):
                yield from paths(pattern, prefix + str(pattern.pattern))
            else:
                yield prefix + str(pattern.pattern), getattr(pattern.callback, "__module__", "")

    found = list(paths(get_resolver("config.urls")))
    assert found, "no routes read"
    assert not [p for p, module in found if p.startswith("bench") or module.startswith("bench")]


def test_the_bench_settings_refuse_production_mode():
    env = dict(
        os.environ,
        APP_MODE="production",
        DEBUG="0",
        SECRET_KEY=secrets.token_urlsafe(48),
        ALLOWED_HOSTS="example.com",
        PYTHONPATH=str(ROOT),
    )
    done = subprocess.run(
        [sys.executable, "-c", "import bench.lib.settings"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    assert "never with APP_MODE=production" in done.stderr


# --- the read floors ---------------------------------------------------------------------------------------


@pytest.mark.skipif(connection.vendor != "postgresql", reason="the benchmarks and their floors run on PostgreSQL")
@pytest.mark.parametrize(
    ("ours", "floor"),
    [
        ("/api/v1/chats?limit=2", "chat_list"),
        ("/api/v1/webhook-subscriptions", "subscription_list"),
    ],
)
def test_a_read_floor_answers_the_bytes_of_our_route(ours, floor, widget, api):
    """bench/load.py refuses to measure a floor that answers other bytes than our route; a floor
    built on a name our code no longer has fails here rather than in a benchmark run."""
    from django.test import RequestFactory

    from apps.chats.tests.factories import ChatFactory
    from apps.webhooks.models import Subscription
    from bench.lib import floor_views
    from bench.lib.checks import first_difference

    for n in range(3):
        ChatFactory(widget=widget)
        Subscription.objects.create(widget=widget, url=f"https://hooks.example.com/{n}", events=["chat.created"])
    answer = api().get(ours)
    assert answer.status_code == 200, answer.content
    floor_answer = getattr(floor_views, floor)(
        RequestFactory().get("/", {"widget": widget.pk, "limit": 2 if "chats" in ours else 20})
    )
    assert floor_answer.status_code == 200, floor_answer.content
    assert first_difference(answer.content, floor_answer.content, widget.pk).startswith("identical")


# --- the clean-up -----------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_clean_up_puts_back_messages_rooms_rollups_and_facts(capsys):
    from apps.agents.models import Agent
    from apps.chats import services as chat_services
    from apps.chats.models import Chat
    from apps.chats.visitor import services as visitor_services
    from apps.stats.models import ChatFacts, DailyWidgetFacts
    from bench.lib.restore import Restore, fingerprint
    from tests.support.factories import AgentFactory, WidgetFactory

    # given a widget with a conversation an operator answered (rollups and facts written)
    widget = WidgetFactory()
    agent = AgentFactory(widget=widget, type=Agent.Type.HUMAN)
    session, _ = visitor_services.start_session(widget=widget)
    first = visitor_services.send_message(
        widget=widget, contact=session.contact, data=chat_services.MessageInput(body="Hello")
    )
    chat = Chat.objects.get(pk=first.chat_id)
    Chat.objects.filter(pk=chat.pk).update(agent=agent)
    before = fingerprint(widget.pk, [chat.pk])
    rollups = list(DailyWidgetFacts.objects.filter(widget=widget).values())
    facts = list(ChatFacts.objects.filter(chat_id=chat.pk).values())
    assert rollups and facts

    # when a benchmark writes into that chat and makes new visitors' rooms inside the clean-up
    with Restore(widget.pk, [chat.pk], name="test"):
        for _ in range(3):
            chat_services.post_agent_message(
                widget=widget, chat=chat, agent=None, data=chat_services.MessageInput(body="On its way")
            )
        other, _ = visitor_services.start_session(widget=widget)
        visitor_services.send_message(widget=widget, contact=other.contact, data=chat_services.MessageInput(body="Hi"))
        changed = fingerprint(widget.pk, [chat.pk])

    # then the writes had changed the rollups and facts, and the clean-up put everything back
    assert changed != before
    assert fingerprint(widget.pk, [chat.pk]) == before
    assert list(DailyWidgetFacts.objects.filter(widget=widget).values()) == rollups
    assert list(ChatFacts.objects.filter(chat_id=chat.pk).values()) == facts
    assert "clean-up: the widget's rows, statistics rollups and facts are as before the run" in capsys.readouterr().out


@pytest.mark.django_db
def test_a_run_stopped_before_its_clean_up_is_put_back_by_the_next(tmp_path, capsys):
    from apps.chats import services as chat_services
    from apps.chats.models import Contact
    from apps.chats.visitor import services as visitor_services
    from apps.webhooks.models import Subscription
    from bench.lib.restore import Restore, fingerprint
    from tests.support.factories import WidgetFactory

    # given a widget with a visitor's room
    widget = WidgetFactory()
    session, _ = visitor_services.start_session(widget=widget)
    first = visitor_services.send_message(
        widget=widget, contact=session.contact, data=chat_services.MessageInput(body="Hello")
    )
    before = fingerprint(widget.pk, [first.chat_id])

    # when a run writes rows with unique addresses and is stopped before its clean-up
    stopped = Restore(widget.pk, [first.chat_id], name="load", state_dir=tmp_path).__enter__()
    Subscription.objects.create(widget=widget, url="https://hooks.bench.invalid/load/0", events=["chat.closed"])
    other, _ = visitor_services.start_session(widget=widget, name="Load visitor 0")
    visitor_services.send_message(widget=widget, contact=other.contact, data=chat_services.MessageInput(body="Hi"))
    assert stopped.state_path.exists()

    # then the next run of that benchmark puts the stopped run's rows back first, and can write its own
    with Restore(widget.pk, [first.chat_id], name="load", state_dir=tmp_path) as again:
        assert fingerprint(widget.pk, [first.chat_id]) == before
        assert not Contact.objects.filter(widget=widget, name="Load visitor 0").exists()
        Subscription.objects.create(widget=widget, url="https://hooks.bench.invalid/load/0", events=["chat.closed"])
    assert fingerprint(widget.pk, [first.chat_id]) == before
    assert not again.state_path.exists()
    assert "load: an earlier run stopped before its clean-up: putting its widget back first" in capsys.readouterr().out


@pytest.mark.redis
@pytest.mark.django_db
def test_stale_fan_out_tasks_are_dropped_and_the_others_kept(widget, settings):
    """bench/webhooks.py clears fan-out tasks that other benchmarks left in the broker before its
    end-to-end run: only those none of whose events still waits in the outbox."""
    import base64
    import json
    import uuid

    import redis

    from apps.core import events
    from apps.core.models import OutboxEvent
    from bench.lib.restore import FAN_OUT_TASK, drop_stale_hand_offs

    settings.CELERY_TASK_DEFAULT_QUEUE = queue = f"bench-lib-test-{uuid.uuid4().hex[:8]}"
    waiting = str(
        events.emit(
            widget, "message.created", chat_id=1, message_id=1, client_id="c" * 32, author_type="USER", source="api"
        ).pk
    )
    gone, dispatched = str(uuid.uuid4()), str(OutboxEvent.objects.create(widget=widget, type="x", data={}).pk)
    OutboxEvent.objects.filter(pk=dispatched).update(dispatched_at=timezone.now())

    def message(task: str, ids: list[str]) -> bytes:
        body = base64.b64encode(json.dumps([[ids], {}, {}]).encode()).decode()
        return json.dumps({"body": body, "headers": {"task": task}, "properties": {"body_encoding": "base64"}}).encode()

    kept = [message(FAN_OUT_TASK, [gone, waiting]), message("apps.other.task", [gone])]
    stale = [message(FAN_OUT_TASK, [gone]), message(FAN_OUT_TASK, [dispatched, gone])]
    client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    try:
        client.rpush(queue, *kept, *stale)
        assert drop_stale_hand_offs() == 2
        assert client.lrange(queue, 0, -1) == kept
    finally:
        client.delete(queue)


@pytest.mark.redis
def test_the_run_s_hand_offs_are_dropped_in_one_rewrite_keeping_the_others_in_order(settings):
    """The clean-up drops the queued fan-out tasks of the run's events (any of their events) and keeps
    every other message, duplicates included, in the order the worker would take them."""
    import base64
    import json
    import uuid

    import redis

    from bench.lib.restore import FAN_OUT_TASK, drop_queued_hand_offs, remove_queued

    settings.CELERY_TASK_DEFAULT_QUEUE = queue = f"bench-lib-test-{uuid.uuid4().hex[:8]}"
    ours, other = [str(uuid.uuid4()) for _ in range(3)], str(uuid.uuid4())

    def message(task: str, ids: list[str], n: int = 0) -> bytes:
        body = base64.b64encode(json.dumps([[ids], {}, {}]).encode()).decode()
        headers = {"task": task, "id": str(n)}
        return json.dumps({"body": body, "headers": headers, "properties": {"body_encoding": "base64"}}).encode()

    queued = [
        message(FAN_OUT_TASK, [other], 1),
        message(FAN_OUT_TASK, [ours[0]], 2),
        message("apps.other.task", [ours[1]], 3),
        message(FAN_OUT_TASK, [other, ours[2]], 4),
        message(FAN_OUT_TASK, [other], 1),  # the same bytes twice: both kept
        message(FAN_OUT_TASK, [ours[1]], 5),
    ]
    client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    try:
        client.rpush(queue, *queued)
        assert drop_queued_hand_offs(set(ours)) == 3
        assert client.lrange(queue, 0, -1) == [queued[0], queued[2], queued[4]]
        # a message no longer queued (a worker took it) is not counted; one of two copies goes
        assert remove_queued(client, queue, [queued[0], b"taken meanwhile"]) == 1
        assert client.lrange(queue, 0, -1) == [queued[2], queued[4]]
    finally:
        client.delete(queue)


@pytest.mark.redis
@pytest.mark.django_db
def test_ai_answers_of_deleted_messages_are_dropped_and_the_others_kept(widget, monkeypatch):
    """The clean-up of every benchmark drops queued AI answers whose message is gone (the load
    benchmark's visitor messages each queued one, and 66 291 had piled up on the AI queue)."""
    import base64
    import json
    import uuid

    import redis
    from django.conf import settings

    from apps.ai import runtime
    from apps.chats.tests.factories import MessageFactory
    from bench.lib.restore import AI_ANSWER_TASK, drop_stale_ai_answers

    monkeypatch.setattr(runtime.limits, "QUEUE", queue := f"bench-lib-ai-{uuid.uuid4().hex[:8]}")
    kept_message = MessageFactory(widget=widget)
    gone = kept_message.pk + 1_000_000

    def message(task: str, message_id: int) -> bytes:
        body = base64.b64encode(json.dumps([[message_id], {}, {}]).encode()).decode()
        return json.dumps({"body": body, "headers": {"task": task}, "properties": {"body_encoding": "base64"}}).encode()

    kept = [message(AI_ANSWER_TASK, kept_message.pk), message("apps.other.task", gone)]
    client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    try:
        client.rpush(queue, kept[0], message(AI_ANSWER_TASK, gone), kept[1], message(AI_ANSWER_TASK, gone + 1))
        assert drop_stale_ai_answers() == 2
        assert client.lrange(queue, 0, -1) == kept
    finally:
        client.delete(queue)
