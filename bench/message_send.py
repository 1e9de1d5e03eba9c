"""Message send: POST /api/v1/chats/{id}/messages (a fresh idempotency key per request) vs a plain
view doing the same work (bench.lib.floor_views.send_message): the same service call,
apps.chats.services.post_agent_message, so the same SQL (chat locked, message row, chat facts),
the same statistics rollups, outbox row, websocket push and Celery hand-off after commit, plus the
idempotency key row. What the floor leaves out is exactly the API layer: the token and scope
lookups, the rate-limit counter, the idempotency lookup, the chat fetched for scoping and DRF's
parsing, validation and rendering. Target: ratio at most 3.

Requests go round-robin to 100 active chats of the main widget that have an assigned agent (so
nothing reopens and the author is the chat's agent). The widget is snapshotted first and put back
afterwards (bench.lib.restore: messages, chat facts, statistics rollups and facts, outbox events,
idempotency keys, queued hand-offs), and the fingerprint before and after is checked.
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


def main() -> int:
    data = prepare(NAME)
    if data is None:
        return 0
    from apps.chats.models import Chat
    from bench.lib.restore import Restore

    chat_ids = list(
        Chat.objects.filter(widget_id=data.widget_id, status=Chat.Status.ACTIVE, agent__isnull=False)
        .exclude(pk=data.transcript_chat_id)
        .order_by("-created_at")
        .values_list("pk", flat=True)[:CHATS]
    )
    with Restore(data.widget_id, chat_ids, name=NAME), Server(NAME) as server:
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
