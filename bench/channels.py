"""Channels: Telegram updates in through the hook, operator messages out through the sender.

1. inbound: a Telegram update posted to the real hook (`POST /api/hooks/tg/{hook_id}/` on the
   measured server: the secret token checked in constant time, the update id stored once, the
   contact found, the message stored through the chats services with its events fanned out) vs the
   floor of the same message stored through the visitor API in the same run (`POST
   /api/visitor/v1/{guid}/messages` with a visitor session: the widget and session looked up, the
   same chats service). Figures are sequential keep-alive requests (medians of alternating rounds,
   bench.lib.common.compare) shown as messages per second. Target: floor/ours at most 1.5.
2. outbound: M operator messages of a `tg` chat queued as the handler queues them, then sent by
   the channels sender (`delivery.deliver_due`: lease, credential read, sendMessage over the guarded
   client, attempt row, status) to a loopback HTTPS fake of the Bot API in a process of its own, vs
   a bare loop POSTing the same bodies to the same fake on one keep-alive session. Sends per second;
   target: ours/floor at least 0.5.

Needs PostgreSQL (DATABASE_URL). Works in a widget of its own, deleted at the end with every row of
the run. Environment: BENCH_CHANNELS_SENDS (M, default 500), BENCH_ITERATIONS, BENCH_ROUNDS.
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

# Run as `python bench/channels.py`, this file's folder comes first on sys.path and its name would
# hide the `channels` package (Django Channels): the folder goes, the project root comes in.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.insert(0, str(_HERE.parent))

from bench.lib.common import Server, bench_line, compare, env_int, expect, session, skipped  # noqa: E402
from bench.lib.env import ROOT, migrations_pending, postgres_problem, setup_django  # noqa: E402

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
    from apps.webhooks import services as webhooks

    hook_id, secret = secrets.token_urlsafe(24), secrets.token_hex(32)
    MessengerConnection.objects.create(
        widget=widget,
        provider="tg",
        hook_id=hook_id,
        token_encrypted=webhooks.encrypt_secret(TOKEN),
        hook_secret_encrypted=webhooks.encrypt_secret(secret),
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


def outbound(widget, fake_base: str, ca_path: str, sends: int) -> tuple[float, float]:
    from unittest import mock

    import requests

    from apps.agents.services import create_human_agent
    from apps.channels import delivery
    from apps.channels.models import OutboundDelivery
    from apps.chats import services as chat_services
    from apps.chats.models import Chat

    chat = Chat.objects.get(widget=widget, channel="tg")
    agent = create_human_agent(widget=widget, email=f"channels-bench-{uuid.uuid4().hex[:8]}@example.com", name="Op")
    with mock.patch.object(delivery, "trigger", lambda countdown=None: None):  # the run sends them itself
        for n in range(sends):
            chat_services.post_agent_message(
                widget=widget, chat=chat, agent=agent, data=chat_services.MessageInput(body=f"Ответ оператора {n}")
            )
    bodies = list(OutboundDelivery.objects.filter(widget=widget, channel="tg").values_list("body", flat=True))
    assert len(bodies) == sends, len(bodies)

    delivery.deliver_due(max_seconds=5, batch_size=1)  # warm: one row, the pooled session opened
    pending = OutboundDelivery.objects.filter(widget=widget, status="pending").count()
    started = time.perf_counter()
    while delivery.deliver_due(max_seconds=120) > 0:
        pass
    ours_elapsed = time.perf_counter() - started
    delivered = OutboundDelivery.objects.filter(widget=widget, status="delivered").count()
    if delivered != sends:
        raise RuntimeError(f"{delivered} of {sends} delivered")

    bare = requests.Session()
    bare.verify, bare.trust_env = ca_path, False
    url = f"{fake_base}/bot{TOKEN}/sendMessage"
    headers = {"Content-Type": "application/json"}
    for body in bodies[:20]:
        bare.post(url, data=body.encode(), headers=headers, timeout=10)
    started = time.perf_counter()
    for body in bodies[:pending]:
        response = bare.post(url, data=body.encode(), headers=headers, timeout=10)
        assert response.status_code == 200, response.status_code
    floor_elapsed = time.perf_counter() - started
    bare.close()
    return pending / ours_elapsed, pending / floor_elapsed


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
        sends = env_int("BENCH_CHANNELS_SENDS", 500)
        ours_rate, floor_rate = outbound(widget, fake_base, ca_path, sends)
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
        fake.stdin.close()
        fake.wait(timeout=30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
