"""Channels: Telegram updates in through the hook, operator messages out through the sender.

1. inbound: a Telegram update posted to the real hook (`POST /api/hooks/tg/{hook_id}/` on the
   measured server: the secret token checked in constant time, the update id stored once, the
   contact found, the message stored through the chats services with its events fanned out) vs the
   floor of the same message stored through the visitor API in the same run (`POST
   /api/visitor/v1/{guid}/messages` with a visitor session: the widget and session looked up, the
   same chats service). Figures are sequential keep-alive requests (medians of rounds in which the two
   alternate call by call, bench.lib.common.compare) shown as messages per second. Target: floor/ours at most 1.5.
2. outbound: M operator messages of a `tg` chat queued as the handler queues them, then sent by
   the delivery engine (`apps.webhooks` `deliver_due`: lease, the messenger kind's credential read,
   sendMessage over the guarded client one at a time as the kind keeps a chat's order, attempt rows,
   status) to a loopback HTTPS fake of the Bot API in a process of its own, vs
   a bare loop POSTing the same bodies to the same fake on one keep-alive session, in alternating
   rounds (medians of the per-round rates). Sends per second; target: ours/floor at least 0.5.

Needs PostgreSQL (DATABASE_URL). Works in a widget of its own, deleted at the end with every row of
the run. Environment: BENCH_CHANNELS_SENDS (M per round, default 100), BENCH_ROUNDS (default 5),
BENCH_ITERATIONS.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import time
import uuid
from itertools import count
from pathlib import Path

from apps.core import crypto

# Run as `python bench/channels.py`, this file's folder comes first on sys.path and its name would
# hide the `channels` package (Django Channels): the folder goes, the project root comes in.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.insert(0, str(_HERE.parent))

from bench.lib.common import Server, bench_line, compare, env_int, expect, session, skipped  # noqa: E402
from bench.lib.env import ROOT, migrations_pending, postgres_problem, setup_django  # noqa: E402
from bench.lib.restore import drop_queued_work_of_deleted_rows  # noqa: E402

NAME = "channels"
TOKEN = "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"
INBOUND_TARGET = 1.5
OUTBOUND_TARGET = 0.5


def start_fake() -> tuple[subprocess.Popen, str, str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "apps.channels.tests.tg_fake", TOKEN],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    ready = json.loads(process.stdout.readline())
    return process, ready["base"], ready["ca_path"]


def connect_telegram(widget) -> tuple[str, str]:
    """A stored Telegram connection as PUT leaves it (token and hook secret encrypted)."""
    from apps.channels.models import MessengerConnection

    hook_id, secret = secrets.token_urlsafe(24), secrets.token_hex(32)
    MessengerConnection.objects.create(
        widget=widget,
        provider="tg",
        hook_id=hook_id,
        token_encrypted=crypto.encrypt_secret(TOKEN),
        hook_secret_encrypted=crypto.encrypt_secret(secret),
        webhook_status="registered",
        inbound_live=True,
    )
    return hook_id, secret


def inbound(server: Server, widget, hook_id: str, secret: str) -> tuple[float, float]:
    ids = count(1)
    user = 700000001
    hook = session()
    hook.headers.update({"X-Telegram-Bot-Api-Secret-Token": secret, "Content-Type": "application/json"})
    hook_url = f"{server.base}/api/hooks/tg/{hook_id}/"
    visitor = session()
    base = f"{server.base}/api/visitor/v1/{widget.button_guid}"
    token = expect(visitor.post(f"{base}/sessions", json={"name": "Ivan Petrov"}), 201).json()["session_token"]
    visitor.headers["Authorization"] = f"Visitor {token}"
    text = "Здравствуйте! Где мой заказ 4521?"

    def ours():
        n = next(ids)
        update = {
            "update_id": 100000 + n,
            "message": {
                "message_id": n,
                "from": {"id": user, "is_bot": False, "first_name": "Ivan", "last_name": "Petrov"},
                "chat": {"id": user, "type": "private"},
                "date": int(time.time()),
                "text": text,
            },
        }
        return expect(hook.post(hook_url, data=json.dumps(update).encode()), 200)

    def floor():
        return expect(visitor.post(f"{base}/messages", json={"type": "text", "body": text}), 201)

    ours()
    floor()  # the first of each makes the contact and the room
    return compare(ours, floor, iterations=100)


def outbound(widget, fake_base: str, ca_path: str, sends: int, rounds: int) -> tuple[float, float]:
    """Alternating rounds (the machine's load drifts): per round, `sends` operator messages queued
    (not timed) and sent by the delivery engine, then the same bodies POSTed by the bare loop.
    Returns the medians of the per-round rates."""
    import statistics
    from unittest import mock

    import requests

    from apps.agents.services import create_human_agent
    from apps.chats import services as chat_services
    from apps.chats.models import Chat
    from apps.webhooks import delivery as engine
    from apps.webhooks.models import Delivery

    chat = Chat.objects.get(widget=widget, channel="tg")
    agent = create_human_agent(widget=widget, email=f"channels-bench-{uuid.uuid4().hex[:8]}@example.com", name="Op")
    bare = requests.Session()
    bare.verify, bare.trust_env = ca_path, False
    url = f"{fake_base}/bot{TOKEN}/sendMessage"
    headers = {"Content-Type": "application/json"}

    def queue(count: int) -> list[str]:
        with mock.patch.object(engine.sweep, "trigger", lambda countdown=None: None):  # the run sends them itself
            for n in range(count):
                chat_services.post_agent_message(
                    widget=widget, chat=chat, agent=agent, data=chat_services.MessageInput(body=f"Ответ оператора {n}")
                )
        return list(Delivery.objects.filter(widget=widget, status="pending").values_list("body", flat=True))

    for body in queue(20):  # warm both: the sender's pooled session, the bare session
        bare.post(url, data=body.encode(), headers=headers, timeout=10)
    engine.deliver_due(max_seconds=30)
    ours_rates, floor_rates = [], []
    for _ in range(rounds):
        bodies = queue(sends)
        started = time.perf_counter()
        while engine.deliver_due(max_seconds=120) > 0:
            pass
        ours_rates.append(len(bodies) / (time.perf_counter() - started))
        started = time.perf_counter()
        for body in bodies:
            response = bare.post(url, data=body.encode(), headers=headers, timeout=10)
            assert response.status_code == 200, response.status_code
        floor_rates.append(len(bodies) / (time.perf_counter() - started))
    bare.close()
    total = Delivery.objects.filter(widget=widget).count()
    delivered = Delivery.objects.filter(widget=widget, status="delivered").count()
    if delivered != total:
        raise RuntimeError(f"{delivered} of {total} delivered")
    return statistics.median(ours_rates), statistics.median(floor_rates)


def main() -> int:
    problem = postgres_problem()
    if problem:
        skipped(NAME, problem)
        return 0
    setup_django()
    if migrations_pending():
        print(f"BENCH {NAME} FAILED (unapplied migrations: run `manage.py migrate` on DATABASE_URL first)", flush=True)
        return 1
    from django.conf import settings

    fake, fake_base, ca_path = start_fake()
    # The driver's sender calls the fake (both settings and the CA bundle are read at every call).
    os.environ["REQUESTS_CA_BUNDLE"] = ca_path
    settings.OUTBOUND_ALLOW_LOOPBACK, settings.PROVIDER_API_BASE_TG = True, fake_base
    from apps.billing.models import AccountPlan, Plan
    from apps.core.models import Account
    from apps.core.services import create_widget

    suffix = uuid.uuid4().hex[:10]
    widget = create_widget(owner_email=f"channels-bench-{suffix}@example.com", name=f"channels bench {suffix}")
    plan = Plan.objects.filter(is_paid=True).first()
    if plan is not None:
        AccountPlan.objects.update_or_create(account=widget.account, defaults={"plan": plan})
    hook_id, secret = connect_telegram(widget)
    # The visitor's per-address budgets are for abuse; this is one address sending on purpose.
    os.environ["VISITOR_MESSAGES_PER_ADDRESS_PER_MINUTE"] = "0"
    os.environ["VISITOR_SESSIONS_PER_ADDRESS_PER_HOUR"] = "0"
    try:
        with Server(NAME) as server:
            ours_ms, floor_ms = inbound(server, widget, hook_id, secret)
        ours_rate, floor_rate = 1000 / ours_ms, 1000 / floor_ms
        print(
            f"{NAME}: inbound hook {ours_ms:.2f} ms per update, visitor API {floor_ms:.2f} ms per message", flush=True
        )
        bench_line(
            f"{NAME}_inbound",
            ours=ours_rate,
            floor=floor_rate,
            ratio=floor_rate / ours_rate,
            target=INBOUND_TARGET,
            unit="messages/s",
        )
        sends, rounds = env_int("BENCH_CHANNELS_SENDS", 100), env_int("BENCH_ROUNDS", 5)
        ours_rate, floor_rate = outbound(widget, fake_base, ca_path, sends, rounds)
        bench_line(
            f"{NAME}_outbound",
            ours=ours_rate,
            floor=floor_rate,
            ratio=ours_rate / floor_rate,
            target=f"ratio>={OUTBOUND_TARGET}",
            unit="sends/s",
        )
    finally:
        Account.objects.filter(pk=widget.account_id).delete()
        drop_queued_work_of_deleted_rows(NAME)
        fake.stdin.close()
        fake.wait(timeout=30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
