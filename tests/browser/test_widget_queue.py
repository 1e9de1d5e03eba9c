"""The visitor's place in line, in Chromium against the real web process: routing on (round robin,
one chat per operator), the only online operator busy, the visitor sees "You are number 2 in line";
as the chats ahead are assigned the number goes down, and the line disappears once an operator has
the visitor's own chat. The screenshot of the guide (docs/img/widget-queue.png) is taken here."""

from __future__ import annotations

import secrets
from pathlib import Path

import pytest
import requests
from playwright.sync_api import expect

from tests.browser.conftest import SERVER_ENV, api_client
from tests.browser.console_pages import add_operator, console_open
from tests.browser.widget_pages import open_widget, send_text

pytestmark = pytest.mark.browser

IMAGES = Path(__file__).resolve().parents[2] / "docs" / "img"
ROUTING = {"mode": "round_robin", "default_capacity": 1, "reroute_after_seconds": None, "show_queue_position": True}


def write(call, method: str, path: str, body: dict) -> dict:
    response = call(method, path, json=body, headers={"X-Service-Idempotency-Key": secrets.token_hex(8)})
    assert response.status_code in (200, 201, 202), response.text
    return response.json()


def visitor_writes(server, text: str) -> int:
    """Another visitor, through the visitor API: a session and a first message; the chat's id."""
    base = server.url(f"/api/visitor/v1/{server.seed['button_guid']}")
    session = requests.post(f"{base}/sessions", json={}, timeout=15)
    assert session.status_code == 201, session.text
    headers = {"Authorization": f"Visitor {session.json()['session_token']}"}
    sent = requests.post(f"{base}/messages", json={"type": "text", "body": text}, headers=headers, timeout=15)
    assert sent.status_code == 201, sent.text
    return sent.json()["chat_id"]


def owner_of(api, chat_id: int) -> int | None:
    return api("GET", f"/api/v1/chats/{chat_id}").json().get("agent_id")


def test_the_visitor_sees_their_place_in_line_go_down_and_disappear(browser, page, start_server, live_var):
    server = start_server(**SERVER_ENV)
    add_operator(live_var, server.seed["button_guid"])
    api = api_client(server)
    write(api, "PUT", "/api/v1/routing", ROUTING)

    with console_open(browser, server):  # Olga is online: the widget offers the chat
        # Given Olga busy with a first chat (her one slot) and a second visitor waiting
        first = visitor_writes(server, "I was here first")
        assert _eventually(lambda: owner_of(api, first) is not None), "routing gave the first chat to Olga"
        second = visitor_writes(server, "I was here second")
        assert owner_of(api, second) is None

        # When the visitor writes from the widget
        page.goto(server.url("/demo/"))
        open_widget(page)
        mine = send_text(page, "Is anyone there?")

        # Then the widget tells them their place in line (no estimate yet: too few chats were assigned)
        line = page.locator("chat-widget .queue")
        expect(line).to_have_text("You are number 2 in line")
        IMAGES.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(IMAGES / "widget-queue.png"))

        # When Olga's first chat closes, routing gives her the second: the visitor moves up
        write(api, "POST", f"/api/v1/chats/{first}/close", {})
        expect(line).to_have_text("You are next in line")
        assert owner_of(api, second) is not None

        # And a reload reads the place again
        page.reload()
        open_widget(page)
        expect(line).to_have_text("You are next in line")

        # When the second chat closes, the visitor's own chat is assigned: the line disappears
        write(api, "POST", f"/api/v1/chats/{second}/close", {})
        expect(line).to_have_count(0)
        assert owner_of(api, mine) is not None


def _eventually(check, *, tries: int = 50) -> bool:
    import time

    for _ in range(tries):
        if check():
            return True
        time.sleep(0.2)
    return False
