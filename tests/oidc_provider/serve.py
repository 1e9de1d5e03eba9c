"""Runs the test OpenID Connect provider over HTTPS on a free loopback port.

    python -m tests.oidc_provider.serve STATE_DIR CERT_PEM KEY_PEM HOST

STATE_DIR holds people.json (the people) and client.json (`client_id`, `client_secret`,
`redirect_uri` of the one registered application, consent skipped). Prints `READY <port>` once it
accepts connections, then serves until killed."""

import json
import os
import ssl
import sys
from pathlib import Path
from socketserver import ThreadingMixIn
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server


class _Server(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _Handler(WSGIRequestHandler):
    def get_environ(self):
        environ = super().get_environ()
        environ["HTTPS"] = "on"  # wsgiref's scheme guess: the issuer and redirects say https
        return environ

    def log_message(self, *args):
        pass


def main() -> None:
    state_dir, cert, key, host = sys.argv[1:5]
    os.environ["OIDC_PROVIDER_DIR"] = state_dir
    os.environ["DJANGO_SETTINGS_MODULE"] = "tests.oidc_provider.settings"
    import django

    django.setup()
    from django.conf import settings
    from django.contrib.auth.models import User
    from django.core.management import call_command
    from django.core.wsgi import get_wsgi_application
    from oauth2_provider.models import Application

    call_command("migrate", verbosity=0)
    for name, person in settings.PEOPLE.items():
        User.objects.create_user(name, email=person["email"], password=person["password"])
    client = json.loads((Path(state_dir) / "client.json").read_text())
    Application.objects.create(
        name="console",
        client_id=client["client_id"],
        client_secret=client["client_secret"],
        client_type=Application.CLIENT_CONFIDENTIAL,
        authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE,
        redirect_uris=client["redirect_uri"],
        algorithm=Application.RS256_ALGORITHM,
        skip_authorization=True,
    )

    server = make_server(host, 0, get_wsgi_application(), server_class=_Server, handler_class=_Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    print(f"READY {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
