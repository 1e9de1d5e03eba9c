"""The webhook floor's load (bench/webhooks.py): locust users POSTing signed webhook bodies to the
loopback receiver as fast as it answers, one keep-alive HTTPS connection per user, so the receiver's
capacity with the engine's connection count is what is measured (gevent keeps this client cheaper
than the receiver). Settings from the environment: BENCH_RECEIVER_SECRET, BENCH_RECEIVER_BODY_BYTES,
BENCH_RECEIVER_SAMPLES (where the (end time, ms, failed) samples are written when locust quits).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import time
import uuid
from pathlib import Path

from locust import FastHttpUser, constant, events, task

SECRET = os.environ["BENCH_RECEIVER_SECRET"].encode()
BODY_BYTES = int(os.environ["BENCH_RECEIVER_BODY_BYTES"])
SAMPLES: list[tuple[float, float, int]] = []


@events.request.add_listener
def _record(request_type, name, response_time, response_length, exception=None, **kwargs):
    SAMPLES.append((time.time(), response_time, 0 if exception is None else 1))


@events.quitting.add_listener
def _write(environment, **kwargs):
    Path(os.environ["BENCH_RECEIVER_SAMPLES"]).write_text(json.dumps(SAMPLES))


class Sender(FastHttpUser):
    wait_time = constant(0)
    insecure = True  # the receiver's throw-away CA; the engine verifies it, the floor need not
    concurrency = 1  # one connection per user

    @task
    def post(self) -> None:
        key = str(uuid.uuid4())
        head = json.dumps({"id": key, "type": "message.created", "data": {"pad": ""}}, separators=(",", ":"))
        body = head.replace('"pad":""', '"pad":"' + "x" * max(0, BODY_BYTES - len(head)) + '"').encode()
        ts = str(int(time.time()))
        signature = hmac.new(SECRET, body, hashlib.sha256).hexdigest()
        self.client.post(
            "/floor",
            data=body,
            headers={
                "Content-Type": "application/json",
                "X-Service-Event": "message.created",
                "X-Service-Signature": "sha256=v1:" + signature,
                "X-Service-Idempotency-Key": key,
                "X-Service-Delivery": str(uuid.uuid4()),
                "X-Service-Timestamp": ts,
                "webhook-id": key,
                "webhook-timestamp": ts,
                "webhook-signature": "v1,"
                + hmac.new(SECRET, f"{key}.{ts}.".encode() + body, hashlib.sha256).hexdigest(),
            },
            name="floor",
        )
