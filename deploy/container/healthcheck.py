"""The image's health check: GET /healthz on the web process in this container (200 when the
database, the cache and the broker answer). It asks for the first name of ALLOWED_HOSTS, so the
check passes Django's host validation as a visitor's request does, and never follows a redirect
(APP_MODE=production exempts /healthz from the HTTPS redirect)."""

import http.client
import os
import sys


def main() -> int:
    hosts = [h.strip() for h in os.environ.get("ALLOWED_HOSTS", "").split(",") if h.strip()]
    host = next((h.lstrip(".") for h in hosts if h != "*"), "localhost")
    connection = http.client.HTTPConnection("127.0.0.1", int(os.environ.get("PORT", "8000")), timeout=5)
    try:
        connection.request("GET", "/healthz", headers={"Host": host})
        status = connection.getresponse().status
    except OSError as exc:
        print(f"healthz: {exc}", file=sys.stderr)
        return 1
    return 0 if status == 200 else 1


if __name__ == "__main__":
    sys.exit(main())
