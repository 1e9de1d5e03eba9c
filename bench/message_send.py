"""Message send: POST /api/v1/chats/{id}/messages (a fresh idempotency key per request) vs a plain
view writing the same rows in one transaction (bench.lib.floor_views.send_message: lock the chat,
insert the message, update the chat's facts, insert the outbox event and the idempotency key).
Target: ratio at most 3.

Requests go round-robin to 100 active chats of the main widget that have an assigned agent (so
nothing reopens and the author is the chat's agent). Afterwards the rows written here are deleted
and those chats' facts restored, so the data set stays as seeded.
"""

import itertools
import sys
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.lib.common import Server, compare, expect, prepare, report_latency, session  # noqa: E402

NAME = "message_send"
TARGET = 3
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


def main() -> int:
    data = prepare(NAME)
    if data is None:
        return 0
    from django.db import transaction
    from django.utils import timezone

    from apps.chats.models import Chat, Message
    from apps.core.models import IdempotencyKey, OutboxEvent

    chats = list(
        Chat.objects.filter(widget_id=data.widget_id, status=Chat.Status.ACTIVE, agent__isnull=False)
        .exclude(pk=data.transcript_chat_id)
        .order_by("-created_at")
        .values("pk", *RESTORED)[:CHATS]
    )
    chat_ids = [c["pk"] for c in chats]
    last_message = Message.objects.order_by("-pk").values_list("pk", flat=True).first() or 0
    started_at = timezone.now()
    try:
        with Server(NAME) as server:
            ours_session, floor_session = session(data.token), session()
            ours_targets = itertools.cycle(chat_ids)
            floor_targets = itertools.cycle(chat_ids)
            words = itertools.cycle(["Здравствуйте, ваш заказ передан в доставку", "Hello, your order has shipped"])

            def ours():
                return expect(
                    ours_session.post(
                        f"{server.base}/api/v1/chats/{next(ours_targets)}/messages",
                        json={"type": "text", "body": next(words)},
                        headers={"X-Service-Idempotency-Key": uuid.uuid4().hex},
                    ),
                    202,
                )

            def floor():
                return expect(
                    floor_session.post(
                        f"{server.base}/bench/chats/{next(floor_targets)}/messages",
                        params={"widget": data.widget_id},
                        json={"type": "text", "body": next(words)},
                        headers={"X-Service-Idempotency-Key": uuid.uuid4().hex},
                    ),
                    202,
                )

            try:
                print(f"{NAME}: ours answers {ours().json()}; the floor {floor().json()}")
            except RuntimeError as error:
                print(f"BENCH {NAME} FAILED ({error}; see var/bench/{NAME}.server.log)", flush=True)
                return 1
            ours_ms, floor_ms = compare(ours, floor, iterations=100)
            report_latency(NAME, ours_ms, floor_ms, target=TARGET)
    finally:
        with transaction.atomic():
            Message.objects.filter(pk__gt=last_message, chat_id__in=chat_ids).delete()
            OutboxEvent.objects.filter(widget_id=data.widget_id, created_at__gte=started_at).delete()
            IdempotencyKey.objects.filter(widget_id=data.widget_id, created_at__gte=started_at).delete()
            for chat in chats:
                Chat.objects.filter(pk=chat["pk"]).update(**{field: chat[field] for field in RESTORED})
    return 0


if __name__ == "__main__":
    sys.exit(main())
