"""Identity verification in Chromium against the real web process: the site signs the person's id
with the widget's identity secret, `ChatWidget.setUser` proves it, and two browsers (a laptop and a
phone) share the person's one conversation; `ChatWidget.reset()` (the site's logout) shows the
anonymous widget again. The server's log never holds the secret."""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import SERVER_ENV, api_client
from tests.browser.console_pages import add_operator, console_open
from tests.browser.widget_pages import open_widget, send_text, wait_ready

pytestmark = pytest.mark.browser

PHONE = {"width": 390, "height": 844}


def sign(secret: str, external_id: str) -> str:
    return hmac.new(secret.encode(), external_id.encode(), hashlib.sha256).hexdigest()


def site_page(host_pages, server, path: str, user: dict | None) -> str:
    """A page of the customer's site that names the signed-in person (or nobody) to the widget."""
    call = f'addEventListener("load", () => ChatWidget.setUser({json.dumps(user)}));' if user else ""
    return host_pages.add(
        path,
        f"""<!doctype html><html lang="en"><title>Shop</title><body><main><h1>Shop</h1></main>
<script src="{server.base}/static/widget/loader.js?guid={server.seed["button_guid"]}" async></script>
<script>{call}</script></body></html>""",
    )


def test_a_verified_person_has_one_conversation_on_two_devices_and_reset_forgets_it(
    browser, start_server, live_var, host_pages, shot
):
    server = start_server(**SERVER_ENV)
    add_operator(live_var, server.seed["button_guid"])
    api = api_client(server)
    made = api("POST", "/api/v1/widget/identity-secret")
    assert made.status_code == 201, made.text
    secret = made.json()["secret"]
    changed = api(
        "PATCH",
        "/api/v1/widget/settings",
        json={"identity_verification": "required"},
        headers={"X-Service-Idempotency-Key": secrets.token_hex(8)},
    )
    assert changed.status_code == 200, changed.text
    user = {"id": "user-42", "hash": sign(secret, "user-42"), "name": "Ann Lee", "email": "ann@example.com"}
    url = site_page(host_pages, server, "/account.html", user)

    with console_open(browser, server):  # an operator is online: the widget offers the chat
        laptop = browser.new_context(viewport={"width": 1280, "height": 800}, locale="en-US").new_page()
        laptop.goto(url)
        open_widget(laptop)
        chat_id = send_text(laptop, "Written on the laptop")

        phone_context = browser.new_context(viewport=PHONE, locale="en-US", has_touch=True)
        phone = phone_context.new_page()
        phone.goto(url)
        open_widget(phone)
        # The phone's session joined the person's contact: the laptop's message is there
        expect(phone.locator("chat-widget .msg.me", has_text="Written on the laptop")).to_be_visible()
        assert send_text(phone, "And this from the phone") == chat_id
        # ...and the laptop sees the phone's message live, in the same chat
        expect(laptop.locator("chat-widget .msg.me", has_text="And this from the phone")).to_be_visible()
        shot(phone, "phone")
        shot(laptop, "desktop")

        contact = api("GET", "/api/v1/contacts/by-external-id/user-42").json()
        assert (contact["name"], contact["email"]) == ("Ann Lee", "ann@example.com")
        identity = api("GET", f"/api/v1/contacts/{contact['id']}/identity").json()
        assert identity["verified"] is True

        # reset(): the phone forgets the session and the messages and shows the anonymous widget
        phone.evaluate("ChatWidget.reset()")
        expect(phone.locator("chat-widget .msg.me")).to_have_count(0)
        phone.wait_for_function(
            "() => !JSON.parse(localStorage.getItem('chatwidget:' + ChatWidget.guid) || '{}').token"
        )
        # The site's signed-out page names nobody
        phone.goto(site_page(host_pages, server, "/signed-out.html", None))
        wait_ready(phone)
        expect(phone.locator("chat-widget .msg.me")).to_have_count(0)
        # An anonymous visitor still chats under `required`, in a conversation of their own
        if not phone.get_by_role("dialog").is_visible():
            open_widget(phone)
        assert send_text(phone, "Anonymous now") != chat_id
        expect(laptop.locator("chat-widget .msg.me", has_text="Anonymous now")).to_have_count(0)
        phone_context.close()

        # A page whose hash is wrong is refused under `required`: the widget carries on anonymous
        forged = site_page(host_pages, server, "/forged.html", {**user, "hash": sign("guess", "user-42")})
        stranger = browser.new_context(locale="en-US").new_page()
        stranger.goto(forged)
        open_widget(stranger)
        expect(stranger.locator("chat-widget .msg.me")).to_have_count(0)
        stranger.wait_for_function(
            "() => !JSON.parse(localStorage.getItem('chatwidget:' + ChatWidget.guid) || '{}').token"
        )
        stranger.context.close()
        laptop.context.close()

    log = server.output()
    assert "identity" in log  # the requests were logged...
    assert secret not in log and secret.removeprefix("idsec_") not in log  # ...never the secret
