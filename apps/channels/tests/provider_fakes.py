"""Loopback HTTPS fakes of the generic messenger providers' APIs (Viber REST bot API, Meta Graph
Send API and WhatsApp Cloud API, OK.ru bot API, Max bot API, Cian chats, AliExpress IM, an Apple
Messages for Business gateway), each answering in its provider's wire format, for tests and
benchmarks.

Point `PROVIDER_API_BASE_<CODE>` at `fake.base` (for `apple`, the PUT's `url` at `fake.base +
"/v1/message"`), REQUESTS_CA_BUNDLE at `fake.ca_path` and switch OUTBOUND_ALLOW_LOOPBACK on.
`valid_tokens` are accepted; `calls` records every request (method, path, query, headers, JSON
body); `fail_register`, `fail_sends` (a final refusal) and `throttle_sends` (a transient one: 429
with `Retry-After` where the provider uses HTTP, its own status otherwise) make it refuse.
"""

from __future__ import annotations

import json
import ssl
import tempfile
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

import trustme

from apps.channels.providers import apple


@dataclass
class Call:
    method: str
    path: str
    query: dict
    headers: dict
    body: object


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server: _Server

    def log_message(self, format: str, *args: object) -> None:
        pass

    def _handle(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        parts = urlsplit(self.path)
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        call = Call(
            self.command,
            parts.path,
            dict(parse_qsl(parts.query)),
            {k.lower(): v for k, v in self.headers.items()},
            body,
        )
        fake = self.server.fake
        with fake.lock:
            fake.calls.append(call)
        status, answer, extra = fake.answer(call)
        data = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in extra.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    do_POST = do_GET = do_DELETE = _handle


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    fake: ProviderFake

    def handle_error(self, request: object, client_address: object) -> None:
        pass


@dataclass
class ProviderFake:
    code: str
    valid_tokens: set[str] = field(default_factory=set)
    fail_register: bool = False
    fail_sends: bool = False
    throttle_sends: int = 0
    retry_after: int = 30
    page_id: str = "1029384756"  # Messenger: what `GET /me` answers for a valid page token
    calls: list[Call] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.lock = threading.Lock()
        self._tmp = tempfile.TemporaryDirectory(prefix=f"{self.code}-fake-")
        self.ca_path = Path(self._tmp.name) / "ca.pem"
        self._sent = 0

    # --- what each provider answers ---------------------------------------------------------------

    def _token(self, call: Call) -> str:
        if self.code == "vb":
            return call.headers.get("x-viber-auth-token", "")
        if self.code == "ok":
            return call.query.get("access_token", "")
        if self.code == "mx":
            return call.headers.get("authorization", "")
        if self.code == "apple":
            auth = call.headers.get("authorization", "")
            ok = any(apple.verify_jwt(t, auth[7:]) for t in self.valid_tokens) if auth.startswith("Bearer ") else False
            return next(iter(self.valid_tokens)) if ok else ""
        auth = call.headers.get("authorization", "")
        return auth[7:] if auth.startswith("Bearer ") else ""

    def _refuse_token(self) -> tuple[int, dict]:
        return {
            "vb": (200, {"status": 2, "status_message": "invalidAuthToken"}),
            "ok": (200, {"error_code": 102, "error_msg": "PARAM_SESSION_EXPIRED : Session expired"}),
            "mx": (401, {"code": "verify.token", "message": "Invalid access_token"}),
            "fb": (401, {"error": {"message": "Invalid OAuth access token.", "type": "OAuthException", "code": 190}}),
            "wa": (401, {"error": {"message": "Invalid OAuth access token.", "type": "OAuthException", "code": 190}}),
        }.get(self.code, (401, {"message": "Unauthorized"}))

    def _is_register(self, call: Call) -> bool:
        return call.path in (
            "/pa/set_webhook",
            "/graph/me/subscribe",
            "/subscriptions",
            "/v1/chats/subscribe-webhook",
            "/im/webhook/subscribe",
        )

    def _register_answer(self) -> tuple[int, dict]:
        if self.fail_register:
            return {
                "vb": (200, {"status": 1, "status_message": "Result[HttpRequest[POST /] failed, ...] invalidUrl"}),
                "ok": (200, {"error_code": 5000, "error_msg": "Webhook url is not reachable"}),
                "mx": (200, {"success": False, "message": "Webhook url is not reachable"}),
                "ali": (400, {"error_code": "InvalidUrl", "error_message": "Webhook url is not reachable"}),
            }.get(self.code, (400, {"message": "Webhook url is not reachable"}))
        return {
            "vb": (200, {"status": 0, "status_message": "ok", "chat_hostname": "SN-CHAT-01_", "event_types": []}),
            "ok": (200, {"success": True}),
            "mx": (200, {"success": True}),
            "cian": (200, {"result": {"success": True}}),
            "ali": (200, {"success": True}),
        }[self.code]

    def _is_send(self, call: Call) -> bool:
        return (
            call.path in ("/pa/send_message", "/v19.0/me/messages", "/messages", "/v1/chats/send-message")
            or call.path in ("/im/message/send", "/v1/message")
            or call.path.startswith("/graph/me/messages/")
            or (call.path.startswith("/v19.0/") and call.path.endswith("/messages"))
        )

    def _send_answer(self, call: Call) -> tuple[int, dict, dict]:
        if self.throttle_sends > 0:
            self.throttle_sends -= 1
            if self.code == "vb":
                return 200, {"status": 12, "status_message": "tooManyRequests"}, {}
            if self.code == "ok":
                return 200, {"error_code": 1, "error_msg": "UNKNOWN : rate limit"}, {}
            return 429, {"message": "Too many requests"}, {"Retry-After": str(self.retry_after)}
        if self.fail_sends:
            return {
                "vb": (200, {"status": 6, "status_message": "notSubscribed"}, {}),
                "ok": (200, {"error_code": 160, "error_msg": "CHAT_NOT_FOUND"}, {}),
                "fb": (400, {"error": {"message": "(#100) No matching user found", "code": 100}}, {}),
                "wa": (400, {"error": {"message": "(#131030) Recipient not in allowed list", "code": 131030}}, {}),
            }.get(self.code, (400, {"message": "chat not found"}, {}))
        self._sent += 1
        n = self._sent
        return {
            "vb": (200, {"status": 0, "status_message": "ok", "message_token": 5000 + n}, {}),
            "fb": (200, {"recipient_id": "1", "message_id": f"m_{n}"}, {}),
            "wa": (200, {"messaging_product": "whatsapp", "messages": [{"id": f"wamid.{n}"}]}, {}),
            "ok": (200, {"chat_id": "chat:1", "message_id": f"mid.{n}"}, {}),
            "mx": (200, {"message": {"body": {"mid": f"mid.{n}", "seq": n}}}, {}),
            "cian": (200, {"result": {"messageId": n}}, {}),
            "ali": (200, {"message_id": str(n)}, {}),
            "apple": (200, {}, {}),
        }[self.code]

    def answer(self, call: Call) -> tuple[int, dict, dict]:
        token = self._token(call)
        if token not in self.valid_tokens:
            status, body = self._refuse_token()
            return status, body, {}
        if self._is_register(call):
            status, body = self._register_answer()
            return status, body, {}
        if self.code == "fb" and call.method == "GET" and call.path == "/v19.0/me":
            return 200, {"id": self.page_id, "name": "Test page"}, {}
        if call.path == "/v1/chats/unsubscribe-webhook":
            return 200, {"result": {"success": True}}, {}
        if self._is_send(call):
            with self.lock:
                return self._send_answer(call)
        return 404, {"message": "Not Found"}, {}

    # --- lifecycle --------------------------------------------------------------------------------

    def start(self) -> ProviderFake:
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

    def paths(self) -> list[str]:
        with self.lock:
            return [c.path for c in self.calls]

    def sends(self) -> list[Call]:
        with self.lock:
            return [c for c in self.calls if self._is_send(c)]
