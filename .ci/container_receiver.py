"""CI's webhook receiver for .ci/container.sh, run inside the worker container (the image's Python,
standard library only): HTTPS on loopback, each delivery's X-Service-Signature checked with the
subscription's secret, one JSON line per delivery appended to --out, 204 (401 on a bad signature)."""

import argparse
import hashlib
import hmac
import json
import ssl
from http.server import BaseHTTPRequestHandler, HTTPServer


def main() -> None:
    parser = argparse.ArgumentParser()
    for name in ("--port", "--cert", "--key", "--secret", "--out"):
        parser.add_argument(name, required=True)
    args = parser.parse_args()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            expected = "sha256=v1:" + hmac.new(args.secret.encode(), body, hashlib.sha256).hexdigest()
            verified = hmac.compare_digest(expected, self.headers.get("X-Service-Signature", ""))
            with open(args.out, "a", encoding="utf-8") as out:
                out.write(json.dumps({"verified": verified, "body": json.loads(body or b"null")}) + "\n")
            self.send_response(204 if verified else 401)
            self.end_headers()

        def log_message(self, *_args) -> None:
            pass

    server = HTTPServer(("127.0.0.1", int(args.port)), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(args.cert, args.key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
