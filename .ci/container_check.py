"""The checks of .ci/container.sh against deploy/compose.yaml's stack, every request through its
nginx. `--phase first`: the API with a token made inside the container, a webhook subscription, a
visitor's message and its push on the visitor's websocket, an operator's reply pushed too, and the
webhook delivered to the receiver with a valid signature. `--phase metrics` (after `first`): from the
web container, over the compose network, each worker container's own metrics port refuses a scrape
without METRICS_TOKEN and answers one with it, and the worker that delivered the webhook counts the
delivery. `--phase again` (after `down` and `up`): the same token still answers and the chat is
still there. Exits non-zero with the first failure."""

from __future__ import annotations

import argparse
import json
import pathlib
import shutil
import subprocess
import sys
import time
import uuid

import httpx
from websockets.sync.client import connect

BODY = "Hello through the containers"


def check(condition: bool, what: str, detail: object = "") -> None:
    if not condition:
        sys.exit(f"FAILED {what}: {detail}")
    print(f"ok  {what}")


def frames_until(socket, event: str, body: str) -> dict:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        frame = json.loads(socket.recv(timeout=30))
        if frame.get("event") == event and frame.get("message", {}).get("body") == body:
            return frame
    raise TimeoutError(f"no {event} frame with {body!r}")


def first(args, api: httpx.Client, public: httpx.Client) -> None:
    response = api.post(
        "/api/v1/webhook-subscriptions",
        json={"url": args.hook_url, "events": ["message.created"], "secret": args.hook_secret},
        headers={"X-Service-Idempotency-Key": str(uuid.uuid4())},
    )
    check(response.status_code == 201, "a webhook subscription", response.text[:300])

    visitor_api = f"/api/visitor/v1/{args.button_guid}"
    response = public.post(f"{visitor_api}/sessions", json={"name": "In a container"})
    check(response.status_code == 201, "a visitor session through nginx", response.text[:300])
    session = response.json()
    visitor = httpx.Client(
        base_url=args.base, headers={"Authorization": f"Visitor {session['session_token']}"}, timeout=60
    )
    token = session["session_token"]
    ws_url = args.base.replace("http://", "ws://") + f"/ws/visitor/{args.button_guid}/?session={token}"
    with connect(ws_url, open_timeout=60) as socket:
        socket.send(json.dumps({"type": "ping"}))
        frame = json.loads(socket.recv(timeout=30))
        check(frame.get("event") == "pong", "the visitor's websocket through nginx answers a ping", frame)
        response = visitor.post(f"{visitor_api}/messages", json={"type": "text", "body": BODY})
        check(response.status_code == 201, "the visitor's message through nginx", response.text[:300])
        frames_until(socket, "message", BODY)
        check(True, "the visitor's message is pushed on the visitor's websocket")

        chats = api.get("/api/v1/chats", params={"limit": 10}).json()["data"]
        chat = next(c for c in chats if c["client_id"] == session["client_id"])
        human = next(a for a in api.get("/api/v1/agents").json()["data"] if a["type"] == "human")
        response = api.post(
            f"/api/v1/chats/{chat['id']}/messages",
            json={"type": "text", "body": "An operator's reply", "agent_id": human["id"]},
            headers={"X-Service-Idempotency-Key": str(uuid.uuid4())},
        )
        check(response.status_code == 202, "the operator's reply through the API", response.text[:300])
        frames_until(socket, "message", "An operator's reply")
        check(True, "the operator's reply is pushed on the visitor's websocket")

    hooks = pathlib.Path(args.hooks)
    deadline = time.monotonic() + 90
    delivered = []
    while time.monotonic() < deadline and not delivered:
        lines = hooks.read_text().splitlines() if hooks.exists() else []
        delivered = [
            hook
            for hook in map(json.loads, lines)
            if (hook["body"] or {}).get("type") == "message.created"
            and hook["body"].get("data", {}).get("source") == "visitor"
        ]
        time.sleep(1)
    seen = hooks.read_text()[-500:] if hooks.exists() else "nothing"
    check(bool(delivered), "the visitor's message.created delivered to the receiver", seen)
    check(all(d["verified"] for d in delivered), "the delivery's signature verifies", delivered)


def again(args, api: httpx.Client) -> None:
    response = api.get("/api/v1/chats", params={"limit": 10})
    check(response.status_code == 200, "after down and up, the token made before still answers", response.text[:300])
    chats = response.json()["data"]
    check(len(chats) >= 1, "after down and up, the chat is still there", chats)
    messages = api.get(f"/api/v1/chats/{chats[0]['id']}/messages").json()["data"]
    kept = any(m.get("body") == BODY for m in messages)
    check(kept, "after down and up, the visitor's message is still there", messages)


# Run by the web container's Python (`podman exec -i WEB python -`), with the METRICS_TOKEN every app
# container reads from deploy/.env: the scrapes go over the compose network, by service name, as a
# Prometheus on that network would send them.
SCRAPE = """
import json, os, urllib.error, urllib.request
from prometheus_client.parser import text_string_to_metric_families

token, answers = os.environ["METRICS_TOKEN"], {}
for service in ("worker", "ai", "bulk"):
    url = f"http://{service}:9464/metrics"
    try:
        urllib.request.urlopen(url, timeout=30)
        refused = 200
    except urllib.error.HTTPError as exc:
        refused = exc.code
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=30) as response:
        text = response.read().decode()
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }
    delivered = samples.get(("chatwidget_delivery_attempts_total", (("kind", "webhook"), ("outcome", "delivered"))))
    answers[service] = {"refused": refused, "families": len(text.split("# TYPE")) - 1, "delivered": delivered}
print(json.dumps(answers))
"""


def worker_metrics(args) -> None:
    scraped = subprocess.run(  # noqa: S603 (a fixed command line)
        [shutil.which("podman"), "exec", "-i", args.web_container, "python", "-"],
        input=SCRAPE,
        capture_output=True,
        text=True,
        timeout=120,
    )
    check(scraped.returncode == 0, "the worker containers' metrics ports answer on the compose network", scraped.stderr)
    answers = json.loads(scraped.stdout)
    for service, answer in answers.items():
        check(answer["refused"] == 401, f"{service}:9464/metrics refuses a scrape without METRICS_TOKEN", answer)
        check(answer["families"] > 0, f"{service}:9464/metrics answers the token's scrape", answer)
    delivered = answers["worker"]["delivered"]
    check(bool(delivered and delivered >= 1), "the worker's port counts the webhook it delivered", answers)


def main() -> None:
    parser = argparse.ArgumentParser()
    for name in ("--base", "--phase"):
        parser.add_argument(name, required=True)
    for name in ("--token", "--button-guid", "--hook-url", "--hook-secret", "--hooks"):
        parser.add_argument(name, default="")
    parser.add_argument("--web-container", default="chatwidget_web_1")
    args = parser.parse_args()
    if args.phase == "metrics":
        worker_metrics(args)
        return
    api = httpx.Client(base_url=args.base, headers={"Authorization": f"Bearer {args.token}"}, timeout=60)
    public = httpx.Client(base_url=args.base, timeout=60)
    response = api.get("/api/v1/chats")
    check(response.status_code == 200, "the API answers through nginx with the token", response.text[:300])
    if args.phase == "first":
        first(args, api, public)
    else:
        again(args, api)


if __name__ == "__main__":
    main()
