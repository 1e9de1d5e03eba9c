"""A loopback HTTPS fake of the Telegram Bot API (the wire format of https://core.telegram.org/bots/api:
`POST /bot<token>/<method>` with a JSON body, answers `{"ok": true, "result": ...}` or
`{"ok": false, "error_code", "description", "parameters"?}`), for tests and benchmarks.

Point PROVIDER_API_BASE_TG at `fake.base`, REQUESTS_CA_BUNDLE at `fake.ca_path` and switch
OUTBOUND_ALLOW_LOOPBACK on. `valid_tokens` are accepted; `calls` records every request
(method name, token, JSON body); `fail_set_webhook`, `throttle_sends` (429 with `retry_after`) and
`fail_sends` (400) make it refuse.
"""

from __future__ import annotations

import json
import ssl
import tempfile
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import trustme


@dataclass
class Call:
    method: str
    token: str
    body: dict


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server: _Server

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        parts = self.path.strip("/").split("/")
        fake = self.server.fake
        status, answer = 404, {"ok": False, "error_code": 404, "description": "Not Found"}
        if len(parts) == 2 and parts[0].startswith("bot"):
            token, method = parts[0][3:], parts[1]
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                body = {}
            with fake.lock:
                fake.calls.append(Call(method, token, body))
            status, answer = fake.answer(token, method, body)
        data = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    fake: TelegramFake

    def handle_error(self, request: object, client_address: object) -> None:
        pass


@dataclass
class TelegramFake:
    valid_tokens: set[str] = field(default_factory=set)
    fail_set_webhook: bool = False
    throttle_sends: int = 0  # the next N sendMessage calls answer 429 retry_after 7
    fail_sends: bool = False
    retry_after: int = 7
    calls: list[Call] = field(default_factory=list)
    # long-poll mode: what getUpdates hands out (an offset confirms, and forgets, the ones below it)
    pending_updates: list[dict] = field(default_factory=list)
    webhook_set: bool = False  # getUpdates is refused while a webhook is set, as Telegram does

    def __post_init__(self) -> None:
        self.lock = threading.Lock()
        self._tmp = tempfile.TemporaryDirectory(prefix="tg-fake-")
        self.ca_path = Path(self._tmp.name) / "ca.pem"
        self._message_id = 0

    def answer(self, token: str, method: str, body: dict) -> tuple[int, dict]:
        if token not in self.valid_tokens:
            return 401, {"ok": False, "error_code": 401, "description": "Unauthorized"}
        if method == "getMe":
            return 200, {"ok": True, "result": {"id": 1, "is_bot": True, "first_name": "Shop", "username": "shop_bot"}}
        if method == "setWebhook":
            if self.fail_set_webhook:
                return 400, {
                    "ok": False,
                    "error_code": 400,
                    "description": "Bad Request: bad webhook: Failed to resolve host",
                }
            self.webhook_set = True
            return 200, {"ok": True, "result": True, "description": "Webhook was set"}
        if method == "deleteWebhook":
            self.webhook_set = False
            return 200, {"ok": True, "result": True, "description": "Webhook was deleted"}
        if method == "getUpdates":
            if self.webhook_set:
                return 409, {
                    "ok": False,
                    "error_code": 409,
                    "description": "Conflict: can't use getUpdates method while webhook is active",
                }
            offset, limit = int(body.get("offset") or 0), int(body.get("limit") or 100)
            with self.lock:
                self.pending_updates = [u for u in self.pending_updates if u["update_id"] >= offset]
                return 200, {"ok": True, "result": self.pending_updates[:limit]}
        if method == "sendMessage":
            with self.lock:
                if self.throttle_sends > 0:
                    self.throttle_sends -= 1
                    return 429, {
                        "ok": False,
                        "error_code": 429,
                        "description": f"Too Many Requests: retry after {self.retry_after}",
                        "parameters": {"retry_after": self.retry_after},
                    }
                self._message_id += 1
                message_id = self._message_id
            if self.fail_sends:
                return 400, {"ok": False, "error_code": 400, "description": "Bad Request: chat not found"}
            return 200, {"ok": True, "result": {"message_id": message_id, "chat": {"id": body.get("chat_id")}}}
        return 404, {"ok": False, "error_code": 404, "description": "Not Found"}

    def start(self) -> TelegramFake:
        ca = trustme.CA()
        ca.cert_pem.write_to_path(str(self.ca_path))
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ca.issue_cert("127.0.0.1", "localhost").configure_cert(context)
        self._httpd = _Server(("127.0.0.1", 0), _Handler)
        self._httpd.fake = self
        self._httpd.socket = context.wrap_socket(self._httpd.socket, server_side=True)
        threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._tmp.cleanup()

    @property
    def base(self) -> str:
        return f"https://127.0.0.1:{self._httpd.server_address[1]}"

    def methods(self) -> list[str]:
        with self.lock:
            return [c.method for c in self.calls]


def main() -> None:
    """A fake in a process of its own (benchmarks): `python -m apps.channels.tests.tg_fake TOKEN...`
    prints `{"base", "ca_path"}` as one JSON line and serves until its stdin closes."""
    import sys

    fake = TelegramFake(valid_tokens=set(sys.argv[1:])).start()
    fake.calls = _Discarded()
    print(json.dumps({"base": fake.base, "ca_path": str(fake.ca_path)}), flush=True)
    sys.stdin.read()
    fake.stop()


class _Discarded(list):
    """A call log that keeps nothing (a long benchmark run would only grow it)."""

    def append(self, item: object) -> None:
        pass


if __name__ == "__main__":
    main()
