"""Starts the test OpenID Connect provider (`serve.py`) in a subprocess and plays the browser at it.

`running(state_dir, people=..., redirect_uri=...)` yields a `Provider` once it answers over HTTPS
(a certificate from a trustme CA; `ca_path` is what the app and the browser trust), and stops the
process afterwards. `browse(provider, authorize_url, username)` signs the person in at the
provider's login form and returns the URL the provider sends the browser back to."""

from __future__ import annotations

import json
import re
import secrets
import select
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, urljoin, urlsplit

import requests
import trustme

ROOT = Path(__file__).resolve().parents[2]
# Cookies ignore ports: on the console's own address the provider's session cookie would replace
# the console's in a browser. Another loopback address keeps them apart.
HOST = "127.0.0.2"
START_TIMEOUT = 120  # seconds: migrations on a loaded machine
PASSWORD = "provider-Password-7"


@dataclass
class Provider:
    base: str
    issuer: str
    ca_path: str
    client_id: str
    client_secret: str
    db_path: Path

    def grants(self) -> list[tuple[str, str]]:
        """(code_challenge, code_challenge_method) of every authorization code the provider issued."""
        with sqlite3.connect(self.db_path) as db:
            return db.execute("SELECT code_challenge, code_challenge_method FROM oauth2_provider_grant").fetchall()

    def register_redirect(self, uri: str) -> None:
        """The application's redirect URI, for a console whose port is known only once it runs."""
        with sqlite3.connect(self.db_path) as db:
            db.execute("UPDATE oauth2_provider_application SET redirect_uris = ?", (uri,))


@contextmanager
def running(state_dir: Path, *, people: dict[str, dict], redirect_uri: str) -> Iterator[Provider]:
    ca = trustme.CA()
    cert = ca.issue_cert(HOST)
    cert_path, key_path, ca_path = state_dir / "cert.pem", state_dir / "key.pem", state_dir / "ca.pem"
    cert.cert_chain_pems[0].write_to_path(str(cert_path))
    cert.private_key_pem.write_to_path(str(key_path))
    ca.cert_pem.write_to_path(str(ca_path))
    client = {"client_id": secrets.token_hex(8), "client_secret": secrets.token_hex(16), "redirect_uri": redirect_uri}
    (state_dir / "client.json").write_text(json.dumps(client))
    (state_dir / "people.json").write_text(
        json.dumps({name: {"password": PASSWORD, **person} for name, person in people.items()})
    )
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.oidc_provider.serve", str(state_dir), str(cert_path), str(key_path), HOST],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        ready, _, _ = select.select([process.stdout], [], [], START_TIMEOUT)
        line = process.stdout.readline() if ready else ""
        if not line.startswith("READY "):
            raise RuntimeError(f"the test OpenID provider did not start: {line!r}")
        base = f"https://{HOST}:{int(line.split()[1])}"
        yield Provider(
            base=base,
            issuer=f"{base}/o",
            ca_path=str(ca_path),
            client_id=client["client_id"],
            client_secret=client["client_secret"],
            db_path=state_dir / "provider.sqlite3",
        )
    finally:
        process.terminate()
        process.wait(timeout=30)
        process.stdout.close()


def browse(provider: Provider, authorize_url: str, username: str) -> str:
    """The browser's part: open `authorize_url`, sign in as `username` at the provider's form, and
    return the first URL that leads away from the provider (the app's callback)."""
    browser = requests.Session()
    browser.verify = provider.ca_path
    answer = browser.get(authorize_url, allow_redirects=False, timeout=30)
    login_url = urljoin(authorize_url, answer.headers["Location"])
    page = browser.get(login_url, timeout=30)
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
    form = {
        "csrfmiddlewaretoken": csrf,
        "username": username,
        "password": PASSWORD,
        "next": parse_qs(urlsplit(login_url).query)["next"][0],
    }
    answer = browser.post(login_url, data=form, headers={"Referer": login_url}, allow_redirects=False, timeout=30)
    location = urljoin(login_url, answer.headers["Location"])
    while location.startswith(provider.base):
        answer = browser.get(location, allow_redirects=False, timeout=30)
        assert answer.status_code == 302, (answer.status_code, answer.text[:500])
        location = urljoin(location, answer.headers["Location"])
    return location
