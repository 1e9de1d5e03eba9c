"""Support reply: POST /api/v1/support/chats/{id}/reply (gate, text rules, link guard, lease and
limit checks, store as the support operator, deliver, audit) against the floor of an operator
reply through POST /api/v1/chats/{id}/messages in the same run. Target: ratio at most 2.

Also the link guard alone (normalise, plain-text rules, find and judge every link) on a
3500-character reply with official links: p99 under 2 ms.

Requests go round-robin to two disjoint sets of 50 web-widget chats of the main widget where the
customer wrote (one set per side, so neither side's messages make the other's
`expected_last_message_id` stale). Afterwards the rows written here are deleted, the chats' facts
restored and the support configuration removed, so the data set stays as seeded.
"""

import itertools
import statistics
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.lib.common import Server, bench_line, compare, expect, prepare, report_latency, session  # noqa: E402

NAME = "support_reply"
TARGET = 2
GUARD_TARGET_MS = 2.0
CHATS = 100
RESTORED = (
    "last_message_id",
    "last_message_at",
    "updated_at",
    "status",
    "closed_at",
    "first_agent_reply_at",
    "accepted_by_id",
    "accepted_by_type",
    "accepted_at",
    "handled_by_id",
    "handled_by_type",
    "handled_at",
    "handling",
    "agent_id",
)
GUARD_TEXT = (
    (
        "Здравствуйте! Мы проверили ваш заказ: он передан в доставку и приедет завтра. "
        "Если понадобится помощь, напишите нам. Hello, we checked your order and it ships tomorrow. "
    )
    * 40
)[:3300] + (
    " Details: https://shop.ru/help/orders?id=5, the app https://apps.apple.com/app/id123456789, "
    "write to help@shop.ru or @shop_bot, t.me/shop_bot."
)


def guard_p99() -> tuple[float, float, float]:
    """Wall-clock p50 and p99, and the p99 of this thread's CPU time (on a loaded shared machine
    the wall-clock tail is the scheduler's, not the guard's; both are printed)."""
    from apps.support import linkguard

    catalogue = linkguard.Catalogue(
        hosts=frozenset({"shop.ru"}),
        exact_links=frozenset(),
        app_store_id="123456789",
        play_package=None,
        ipv4=frozenset(),
        handles=frozenset({"shop_bot"}),
        emails=frozenset({"help@shop.ru"}),
    )
    text = GUARD_TEXT[:3500]
    text = text + "." * (3500 - len(text))

    def run():
        normalised = linkguard.normalize_text(text)
        linkguard.check_plain_text(normalised)
        linkguard.check_links(normalised, catalogue)

    for _ in range(200):
        run()
    samples, cpu = [], []
    for _ in range(2000):
        started, started_cpu = time.perf_counter(), time.thread_time()
        run()
        cpu.append((time.thread_time() - started_cpu) * 1000)
        samples.append((time.perf_counter() - started) * 1000)
    samples.sort()
    cpu.sort()
    p99 = int(len(samples) * 0.99) - 1
    return statistics.median(samples), samples[p99], cpu[p99]


def main() -> int:
    data = prepare(NAME)
    if data is None:
        return 0
    from django.db import transaction
    from django.utils import timezone

    from apps.agents.models import Agent
    from apps.chats.models import Chat, Message
    from apps.core.models import ApiToken, IdempotencyKey, OutboxEvent
    from apps.support.config import configure_support
    from apps.support.models import SupportAction, SupportConfig

    p50, p99, cpu_p99 = guard_p99()
    print(
        f"{NAME}: link guard on a 3500-character text: wall p50 {p50:.3f} ms, wall p99 {p99:.3f} ms, "
        f"CPU-time p99 {cpu_p99:.3f} ms (target p99 {GUARD_TARGET_MS} ms)"
    )
    bench_line(
        f"{NAME}_link_guard", ours=p99, floor=GUARD_TARGET_MS, ratio=p99 / GUARD_TARGET_MS, target=1, unit="ms p99"
    )

    operator = Agent.objects.filter(widget_id=data.widget_id, type=Agent.Type.HUMAN).order_by("pk").first()
    prefix = (
        ApiToken.objects.filter(widget_id=data.widget_id, name="bench")
        .order_by("-pk")
        .values_list("prefix", flat=True)[0]
    )
    chats = list(
        Chat.objects.filter(
            widget_id=data.widget_id,
            channel="widget",
            has_client_messages=True,
            last_message__isnull=False,
            agent__isnull=False,
        )
        .exclude(status=Chat.Status.SPAM)
        .exclude(pk=data.transcript_chat_id)
        .order_by("-created_at")
        .values("pk", *RESTORED)[:CHATS]
    )
    if len(chats) < 2 or operator is None:
        print(f"BENCH {NAME} FAILED (the data set has no chats or operator to answer)", flush=True)
        return 1
    half = len(chats) // 2
    ours_ids, floor_ids = [c["pk"] for c in chats[:half]], [c["pk"] for c in chats[half:]]
    last_seen = {c["pk"]: c["last_message_id"] for c in chats}
    last_message = Message.objects.order_by("-pk").values_list("pk", flat=True).first() or 0
    started_at = timezone.now()
    configure_support(
        widget=operator.widget,
        data={
            "enabled": True,
            "operator_agent_id": operator.pk,
            "allowed_tokens": [prefix],
            "ip_allowlist": ["127.0.0.1/32"],
            "link_hosts": ["shop.ru"],
            "emails": ["help@shop.ru"],
            "messenger_handles": ["shop_bot"],
            "channels": ["widget", "tg"],
            "room_reply_limit": {"count": 30, "window_sec": 1800},
            "token_reply_limit": {"per_10_min": 0, "per_day": 0},
        },
    )
    try:
        with Server(NAME) as server:
            ours_session, floor_session = session(data.token), session(data.token)
            ours_targets, floor_targets = itertools.cycle(ours_ids), itertools.cycle(floor_ids)
            words = itertools.cycle(
                ["Здравствуйте, ваш заказ передан в доставку: shop.ru/orders", "Hello, your order has shipped"]
            )

            def ours():
                chat_id = next(ours_targets)
                response = expect(
                    ours_session.post(
                        f"{server.base}/api/v1/support/chats/{chat_id}/reply",
                        json={"text": next(words), "expected_last_message_id": last_seen[chat_id]},
                        headers={"X-Service-Idempotency-Key": uuid.uuid4().hex, "X-Service-Agent": "bench"},
                    ),
                    201,
                )
                last_seen[chat_id] = response.json()["message_id"]
                return response

            def floor():
                return expect(
                    floor_session.post(
                        f"{server.base}/api/v1/chats/{next(floor_targets)}/messages",
                        json={"type": "text", "body": next(words), "agent_id": operator.pk},
                        headers={"X-Service-Idempotency-Key": uuid.uuid4().hex},
                    ),
                    202,
                )

            try:
                print(f"{NAME}: ours answers {ours().json()}; the floor {floor().json()}")
            except RuntimeError as error:
                print(f"BENCH {NAME} FAILED ({error}; see var/bench/{NAME}.server.log)", flush=True)
                return 1
            ours_ms, floor_ms = compare(ours, floor, iterations=50)
            report_latency(NAME, ours_ms, floor_ms, target=TARGET)
    finally:
        with transaction.atomic():
            Message.objects.filter(pk__gt=last_message, chat_id__in=ours_ids + floor_ids).delete()
            OutboxEvent.objects.filter(widget_id=data.widget_id, created_at__gte=started_at).delete()
            IdempotencyKey.objects.filter(widget_id=data.widget_id, created_at__gte=started_at).delete()
            SupportAction.objects.filter(widget_id=data.widget_id, created_at__gte=started_at).delete()
            SupportConfig.objects.filter(widget_id=data.widget_id).delete()
            for chat in chats:
                Chat.objects.filter(pk=chat["pk"]).update(**{field: chat[field] for field in RESTORED})
    return 0


if __name__ == "__main__":
    sys.exit(main())
