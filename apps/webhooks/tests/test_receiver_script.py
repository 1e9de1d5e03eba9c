"""scripts/webhook_receiver.py (the guides' local receiver) accepts what the service signs, with a
generated `whsec_` secret and with a secret of one's own, and refuses a wrong signature. It runs
here on plain HTTP on loopback; the guides' example runs it over TLS in CI (.ci/readme_webhooks.sh)."""

from __future__ import annotations

import importlib.util
import json
import threading
import time
import urllib.error
import urllib.request
from http.server import HTTPServer
from pathlib import Path

import pytest

from apps.core.crypto import generate_secret
from apps.webhooks import signing

SCRIPT = Path(__file__).resolve().parents[3] / "scripts" / "webhook_receiver.py"


def load_script():
    spec = importlib.util.spec_from_file_location("webhook_receiver", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def serve():
    servers = []

    def start(secret: str) -> str:
        server = HTTPServer(("127.0.0.1", 0), load_script().make_handler(secret))
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}/hook"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def deliver(url: str, secret: str, *, sign_with: str | None = None) -> int:
    body = json.dumps({"id": "e1", "type": "message.created", "data": {"chat_id": 1}}).encode()
    key = sign_with or secret
    ts = int(time.time())
    headers = {
        "Content-Type": "application/json",
        "X-Service-Signature": signing.service_signature(key, body),
        "webhook-id": "e1",
        "webhook-timestamp": str(ts),
        "webhook-signature": signing.standard_signature(key, "e1", ts, body),
    }
    try:
        with urllib.request.urlopen(urllib.request.Request(url, data=body, headers=headers), timeout=10) as answer:
            return answer.status
    except urllib.error.HTTPError as exc:
        return exc.code


@pytest.mark.parametrize("secret", ["my-local-signing-secret", "generated"])
def test_the_receiver_verifies_what_the_service_signs(serve, secret, capsys):
    secret = generate_secret() if secret == "generated" else secret
    assert deliver(serve(secret), secret) == 204
    assert "verified message.created e1" in capsys.readouterr().out


def test_the_receiver_refuses_another_secret(serve, capsys):
    assert deliver(serve("my-local-signing-secret"), "my-local-signing-secret", sign_with="another-secret-123") == 401
    assert "REFUSED" in capsys.readouterr().out
