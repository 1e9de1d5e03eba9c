"""A local HTTPS webhook receiver for trying deliveries on your machine (docs/integrating/webhooks.md,
"Webhooks on your machine"): it verifies each delivery with the `standardwebhooks` library and with
X-Service-Signature, prints one line per delivery and answers 204 (401 when a signature is wrong).

    python scripts/webhook_receiver.py --port 9443 --cert server.pem --key server.key --secret SECRET

SECRET is the subscription's secret: a generated `whsec_...` one or your own (16+ characters).
Only the standard library and `standardwebhooks` (requirements/dev.txt) are needed.
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import json
import ssl
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer

from standardwebhooks import Webhook, WebhookVerificationError


def standard_verifier(secret: str) -> Webhook:
    # A generated `whsec_` secret is base64 after the prefix (the library decodes it); a secret of
    # your own is used as its UTF-8 bytes, as the service signs with it.
    return Webhook(secret) if secret.startswith("whsec_") else Webhook(secret.encode())


def service_signature(secret: str, body: bytes) -> str:
    return "sha256=v1:" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def make_handler(secret: str):
    verifier = standard_verifier(secret)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            headers = {name.lower(): value for name, value in self.headers.items()}
            try:
                verifier.verify(body, headers)  # webhook-id, webhook-timestamp, webhook-signature
            except WebhookVerificationError as exc:
                print(f"REFUSED standard signature: {exc}", flush=True)
                self._answer(401)
                return
            if not hmac.compare_digest(service_signature(secret, body), headers.get("x-service-signature", "")):
                print("REFUSED X-Service-Signature", flush=True)
                self._answer(401)
                return
            event = json.loads(body)
            print(f"verified {event['type']} {event['id']} data={json.dumps(event['data'])}", flush=True)
            self._answer(204)

        def _answer(self, status: int) -> None:
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:
            pass

    return Handler


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=9443)
    parser.add_argument("--cert", required=True, help="the receiver's certificate (PEM)")
    parser.add_argument("--key", required=True, help="its private key (PEM)")
    parser.add_argument("--secret", required=True, help="the subscription's signing secret")
    args = parser.parse_args(argv)
    server = HTTPServer(("127.0.0.1", args.port), make_handler(args.secret))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(args.cert, args.key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    print(f"receiving on https://127.0.0.1:{args.port}/", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
