"""A loopback HTTPS fake of the VK API (https://dev.vk.com/method: `POST /method/<name>` with form
parameters `access_token` and `v`; answers `{"response": ...}` or, with HTTP 200,
`{"error": {"error_code", "error_msg"}}`). `communities` maps screen names and ids to communities;
`fail_delete` makes groups.deleteCallbackServer refuse; `calls` records (method, params)."""

from __future__ import annotations

import json
import ssl
import tempfile
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs

import trustme


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        params = {k: v[0] for k, v in parse_qs((self.rfile.read(length) if length else b"").decode()).items()}
        method = self.path.strip("/").removeprefix("method/")
        fake: VkFake = self.server.fake  # type: ignore[attr-defined]
        with fake.lock:
            fake.calls.append((method, params))
        data = json.dumps(fake.answer(method, params)).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def handle_error(self, request: object, client_address: object) -> None:
        pass


def _error(code: int, msg: str) -> dict:
    return {"error": {"error_code": code, "error_msg": msg, "request_params": []}}


@dataclass
class VkFake:
    valid_tokens: set[str] = field(default_factory=set)
    communities: dict[str, dict] = field(default_factory=dict)
    fail_delete: bool = False
    calls: list[tuple[str, dict]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.lock = threading.Lock()
        self._tmp = tempfile.TemporaryDirectory(prefix="vk-fake-")
        self.ca_path = Path(self._tmp.name) / "ca.pem"

    def answer(self, method: str, params: dict) -> dict:
        if params.get("access_token") not in self.valid_tokens:
            return _error(5, "User authorization failed: invalid access_token (4).")
        if method == "groups.getById":
            group = self.communities.get(params.get("group_id", ""))
            if group is None:
                return _error(100, "One of the parameters specified was missing or invalid: group_ids is undefined")
            return {"response": {"groups": [group], "profiles": []}}
        if method == "groups.getCallbackConfirmationCode":
            return {"response": {"code": "a1b2c3d4"}}
        if method == "groups.addCallbackServer":
            return {"response": {"server_id": 3}}
        if method == "groups.setCallbackSettings":
            return {"response": 1}
        if method == "groups.deleteCallbackServer":
            return _error(10, "Internal server error") if self.fail_delete else {"response": 1}
        if method == "messages.send":
            return {"response": 501}
        return _error(3, "Unknown method passed")

    def start(self) -> VkFake:
        ca = trustme.CA()
        ca.cert_pem.write_to_path(str(self.ca_path))
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ca.issue_cert("127.0.0.1", "localhost").configure_cert(context)
        self._httpd = _Server(("127.0.0.1", 0), _Handler)
        self._httpd.fake = self  # type: ignore[attr-defined]
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
            return [m for m, _ in self.calls]
