"""Helpers of the widget's browser tests: host pages on another origin, and the widget's parts found
through its open shadow root (Playwright's CSS and role locators pierce open shadow roots)."""

from __future__ import annotations

import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from playwright.sync_api import Page, expect

LAUNCHER = "chat-widget button.launcher"


class HostPages:
    """A tiny HTTP server on another loopback port (so another origin than the service, as a
    customer's site is) serving pages registered with `add(path, html, headers)`."""

    def __init__(self):
        self.pages: dict[str, tuple[str, dict[str, str]]] = {}
        pages = self.pages

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                html, headers = pages.get(self.path.split("?")[0], ("not found", {}))
                body = html.encode()
                self.send_response(200 if self.path.split("?")[0] in pages else 404)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Cache-Control", "no-store")
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def add(self, path: str, html: str, headers: dict[str, str] | None = None) -> str:
        self.pages[path] = (html, headers or {})
        return self.base + path

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def wait_ready(page: Page, timeout: float = 15_000) -> None:
    page.wait_for_selector("chat-widget[data-ready]", state="attached", timeout=timeout)


def open_widget(page: Page) -> None:
    wait_ready(page)
    page.locator(LAUNCHER).click()
    expect(page.get_by_role("dialog")).to_be_visible()


def send_text(page: Page, text: str, *, name: str = "Type a message…") -> int:
    """Types `text` in the message textbox, sends it with Enter; the chat id once it shows."""
    box = page.get_by_role("textbox", name=name)
    box.fill(text)
    box.press("Enter")
    mine = page.locator("chat-widget .msg.me", has_text=text)
    expect(mine).to_be_visible()
    return int(mine.get_attribute("data-chat"))


def operator_reply(api, server, chat_id: int, body: dict) -> dict:
    """An operator message through the REST API, as the owner agent of the seeded widget."""
    response = api(
        "POST",
        f"/api/v1/chats/{chat_id}/messages",
        json={"agent_id": server.seed["owner_agent_id"], **body},
        headers={"X-Service-Idempotency-Key": uuid.uuid4().hex},
    )
    assert response.status_code == 202, response.text
    return response.json()
