"""The load of bench/load.py: one locust process (headless, bounded in users and time) runs one
scenario against one side (ours or its floor) of the measured server.

The plan (scenario, side, ids, tokens, where to write the samples) is a JSON file named by
BENCH_LOAD_PLAN. Users wait nothing between requests. Every finished request is recorded as
(when it ended, its response time, whether it succeeded) and written to the plan's `samples` file
when locust quits; bench/load.py cuts the warm-up off and computes requests/s, p50/p95/p99 and errors
from them (locust's own percentiles are rounded).
"""

from __future__ import annotations

import itertools
import json
import os
import time
import uuid
from pathlib import Path

from locust import FastHttpUser, constant, events, task

PLAN = json.loads(Path(os.environ["BENCH_LOAD_PLAN"]).read_text())
SAMPLES: list[tuple[float, float, int]] = []
_numbers = itertools.count()
BODIES = ("Здравствуйте, ваш заказ передан в доставку", "Hello, your order has shipped")


@events.request.add_listener
def _record(request_type, name, response_time, response_length, exception=None, **kwargs):
    SAMPLES.append((time.time(), response_time, 0 if exception is None else 1))


@events.quitting.add_listener
def _write(environment, **kwargs):
    Path(PLAN["samples"]).write_text(json.dumps(SAMPLES))


class Load(FastHttpUser):
    wait_time = constant(0)
    network_timeout = 30.0
    connection_timeout = 30.0

    def on_start(self) -> None:
        self.number = next(_numbers)
        self.sent = 0
        self.bearer = {"Authorization": f"Bearer {PLAN['token']}"}
        self.run = getattr(self, f"{PLAN['scenario']}_{PLAN['side']}")

    @task
    def one(self) -> None:
        self.run()

    def _body(self) -> dict:
        self.sent += 1
        return {"type": "text", "body": BODIES[self.sent % 2]}

    # --- chat list --------------------------------------------------------------------------------------

    def chat_list_ours(self) -> None:
        self.client.get("/api/v1/chats?limit=50", headers=self.bearer, name="ours")

    def chat_list_floor(self) -> None:
        self.client.get(f"/bench/chats?widget={PLAN['widget_id']}&limit=50", name="floor")

    # --- operator's message send (each user writes into its own chat) -------------------------------------

    def _chat(self) -> int:
        return PLAN["chat_ids"][self.number % len(PLAN["chat_ids"])]

    def message_send_ours(self) -> None:
        headers = {**self.bearer, "X-Service-Idempotency-Key": uuid.uuid4().hex}
        self.client.post(f"/api/v1/chats/{self._chat()}/messages", json=self._body(), headers=headers, name="ours")

    def message_send_floor(self) -> None:
        self.client.post(
            f"/bench/chats/{self._chat()}/messages?widget={PLAN['widget_id']}",
            json=self._body(),
            headers={"X-Service-Idempotency-Key": uuid.uuid4().hex},
            name="floor",
        )

    # --- visitor's message (each user is one visitor with a room) -----------------------------------------

    def _visitor(self) -> dict:
        return PLAN["visitors"][self.number % len(PLAN["visitors"])]

    def visitor_message_ours(self) -> None:
        visitor = self._visitor()
        self.client.post(
            f"/api/visitor/v1/{PLAN['button_guid']}/messages",
            json=self._body(),
            headers={"Authorization": f"Visitor {visitor['token']}"},
            name="ours",
        )

    def visitor_message_floor(self) -> None:
        visitor = self._visitor()
        self.client.post(
            f"/bench/visitor/{visitor['contact_id']}/messages?widget={PLAN['widget_id']}&guid={visitor['guid']}",
            json=self._body(),
            name="floor",
        )

    # --- webhook subscription list ------------------------------------------------------------------------

    def webhook_subscriptions_ours(self) -> None:
        self.client.get("/api/v1/webhook-subscriptions", headers=self.bearer, name="ours")

    def webhook_subscriptions_floor(self) -> None:
        self.client.get(f"/bench/webhook-subscriptions?widget={PLAN['widget_id']}", name="floor")
