"""A loopback HTTPS site for the crawler tests: `site.test` (resolved to 127.0.0.1 by the tests,
certificate from a trustme CA) serving whatever `pages` holds, and recording every path asked. A slow
site answers each page `delay` seconds late (robots.txt and sitemaps at once); tests of real
processes, which cannot resolve `site.test`, serve it as `127.0.0.1`."""

from __future__ import annotations

import ssl
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import trustme

HOST = "site.test"


@dataclass
class Site:
    port: int
    ca_path: Path
    # path -> (status, headers, body)
    pages: dict[str, tuple[int, dict[str, str], bytes]] = field(default_factory=dict)
    requested: list[str] = field(default_factory=list)
    user_agents: set[str] = field(default_factory=set)
    delay: float = 0.0  # seconds before each page under `delay_prefix` is answered
    delay_prefix: str = "/"
    host: str = HOST

    @property
    def origin(self) -> str:
        return f"https://{self.host}:{self.port}"

    def url(self, path: str) -> str:
        return self.origin + path

    def html(self, path: str, body: str, *, title: str = "Page") -> None:
        document = f"<!doctype html><html><head><title>{title}</title></head><body>{body}</body></html>"
        self.pages[path] = (200, {"Content-Type": "text/html; charset=utf-8"}, document.encode())

    def text(self, path: str, body: str, content_type: str = "text/plain") -> None:
        self.pages[path] = (200, {"Content-Type": content_type}, body.encode())

    def redirect(self, path: str, location: str) -> None:
        self.pages[path] = (302, {"Location": location}, b"")

    def remove(self, path: str, status: int = 404) -> None:
        self.pages[path] = (status, {"Content-Type": "text/plain"}, b"gone")


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 5

    def log_message(self, format, *args):
        pass

    def do_GET(self):
        site: Site = self.server.site
        site.requested.append(self.path)
        site.user_agents.add(self.headers.get("User-Agent", ""))
        if site.delay and self.path.startswith(site.delay_prefix) and self.path not in ("/robots.txt", "/sitemap.xml"):
            time.sleep(site.delay)
        status, headers, body = site.pages.get(self.path, (404, {"Content-Type": "text/plain"}, b"not found"))
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def handle_error(self, request, client_address):
        pass


def serve(tmp_dir: Path, host: str = HOST) -> Iterator[Site]:
    ca = trustme.CA()
    cert = ca.issue_cert(host)
    ca_path = tmp_dir / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_path))
    httpd = _Server(("127.0.0.1", 0), _Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    cert.configure_cert(context)
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    httpd.site = Site(port=httpd.server_address[1], ca_path=ca_path, host=host)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield httpd.site
    finally:
        httpd.shutdown()
        httpd.server_close()
