"""The checks of .ci/nginx.sh, every request through nginx (deploy/nginx/chatwidget.conf in front of
the service in production mode). Exits non-zero with the first failure."""

from __future__ import annotations

import argparse
import json
import pathlib
import ssl
import sys
import uuid

import httpx
from websockets.sync.client import connect

MB = 1024 * 1024
FILE_LIMIT = 10 * MB  # apps.core.files.MAX_FILE_BYTES
NGINX_CAP = 11 * MB  # client_max_body_size in the conf


def check(condition: bool, what: str, detail: object = "") -> None:
    if not condition:
        sys.exit(f"FAILED {what}: {detail}")
    print(f"ok  {what}")


def upload(api: httpx.Client, size: int) -> httpx.Response:
    return api.post(
        "/api/v1/files",
        files={"file": ("blob.bin", b"\0" * size, "application/octet-stream")},
        headers={"X-Service-Idempotency-Key": str(uuid.uuid4())},
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    for name in ("--http", "--https", "--cacert", "--token", "--button-guid", "--static-root"):
        parser.add_argument(name, required=True)
    args = parser.parse_args()
    tls = ssl.create_default_context(cafile=args.cacert)

    # Plain http: a redirect to https, nothing else.
    with httpx.Client(base_url=args.http) as plain:
        response = plain.get("/api/v1/chats")
        check(
            response.status_code == 301 and response.headers["location"].startswith("https://localhost"),
            "plain http redirects to https",
            (response.status_code, response.headers.get("location")),
        )

    api = httpx.Client(base_url=args.https, verify=tls, headers={"Authorization": f"Bearer {args.token}"}, timeout=60)
    public = httpx.Client(base_url=args.https, verify=tls, timeout=30)

    response = api.get("/api/v1/chats")
    check(response.status_code == 200, "the API answers 200 with the token", response.text[:300])
    response = public.get("/api/v1/chats")
    check(
        response.status_code == 401 and response.headers["content-type"].startswith("application/problem+json"),
        "the API answers 401 problem+json without it",
        response.text[:300],
    )

    # The visitor's flow, as the embed script runs it: a session, a first message, the socket.
    visitor_api = f"/api/visitor/v1/{args.button_guid}"
    response = public.post(f"{visitor_api}/sessions", json={"name": "Through nginx"})
    check(response.status_code == 201, "a visitor session", response.text[:300])
    session = response.json()
    visitor = httpx.Client(
        base_url=args.https, verify=tls, headers={"Authorization": f"Visitor {session['session_token']}"}
    )
    response = visitor.post(f"{visitor_api}/messages", json={"type": "text", "body": "Hello through the proxy"})
    check(response.status_code == 201, "the visitor's first message", response.text[:300])

    ws_url = (
        args.https.replace("https://", "wss://") + f"/ws/visitor/{args.button_guid}/?session={session['session_token']}"
    )
    # The first socket of a fresh process, while CI runs the fuzz and the embedded suite alongside:
    # what is checked is that the upgrade passes the proxy, not how fast.
    with connect(ws_url, ssl=tls, open_timeout=60) as socket:
        socket.send(json.dumps({"type": "ping"}))
        frame = json.loads(socket.recv(timeout=15))
        check(frame.get("event") == "pong", "the visitor socket upgrades through nginx and answers a ping", frame)

        chats = api.get("/api/v1/chats", params={"limit": 10}).json()["data"]
        chat = next(c for c in chats if c["client_id"] == session["client_id"])
        agents = api.get("/api/v1/agents").json()["data"]
        human = next(a for a in agents if a["type"] == "human")
        response = api.post(
            f"/api/v1/chats/{chat['id']}/messages",
            json={"type": "text", "body": "An operator's reply", "agent_id": human["id"]},
            headers={"X-Service-Idempotency-Key": str(uuid.uuid4())},
        )
        check(response.status_code == 202, "the operator's reply through the API", response.text[:300])
        while True:  # typing or seen frames may come first
            frame = json.loads(socket.recv(timeout=15))
            if frame.get("event") == "message":
                break
        check(frame["message"]["body"] == "An operator's reply", "the reply reaches the visitor's socket", frame)

    # Bodies: the service's largest file passes; just over it the service refuses with problem+json;
    # over nginx's cap nginx refuses before the service sees a byte.
    response = upload(api, FILE_LIMIT)
    check(response.status_code == 201, "a 10 MB file uploads through nginx", response.text[:300])
    file_id = response.json()["id"]
    response = upload(api, FILE_LIMIT + 8 * 1024)
    check(
        response.status_code == 413
        and response.headers["content-type"].startswith("application/problem+json")
        and response.json()["code"] == "body_too_large",
        "a file just over 10 MB: the service's 413 problem+json",
        (response.status_code, response.headers.get("content-type"), response.text[:300]),
    )
    response = upload(api, NGINX_CAP + MB // 2)
    check(
        response.status_code == 413 and "nginx" in response.text,
        "a body over client_max_body_size: nginx's own 413",
        (response.status_code, response.text[:200]),
    )

    # X-Forwarded-Proto: the absolute URLs the service builds are https, and a client's own header
    # does not reach the service (nginx sets it from the scheme the client used).
    for forged in ({}, {"X-Forwarded-Proto": "http"}):
        response = api.get(f"/api/v1/files/{file_id}", headers=forged)
        location = response.headers.get("location", "")
        check(
            response.status_code == 302 and location.startswith("https://localhost/"),
            f"the service builds https:// links behind the proxy {forged or ''}".strip(),
            (response.status_code, location),
        )

    # Static files come from nginx's alias of STATIC_ROOT.
    response = public.get("/static/console/console.css")
    expected = (pathlib.Path(args.static_root) / "console" / "console.css").read_bytes()
    check(
        response.status_code == 200
        and response.content == expected
        and "max-age=3600" in response.headers.get("cache-control", ""),  # the location's `expires 1h`
        "a static file served by nginx",
        (response.status_code, dict(response.headers)),
    )
    print("all checks passed through nginx")


if __name__ == "__main__":
    main()
