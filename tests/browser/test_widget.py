"""The widget in Chromium against the real web process: the demo page, live replies, a reconnect,
a hostile host page under a strict CSP, Arabic, the offline form, keyboards. Each state is saved
as a screenshot under var/screenshots/."""

from __future__ import annotations

import json
import re
import secrets
from urllib.parse import parse_qs, urlsplit

import pytest
from playwright.sync_api import expect

from apps.widget.tests.test_embed_bundle import FIRST_PAINT_MAX_GZIP, content_hash, gzipped
from tests.browser.conftest import SERVER_ENV, api_client
from tests.browser.console_pages import add_operator, console_open, sign_in
from tests.browser.widget_pages import LAUNCHER, open_widget, operator_reply, send_text, wait_ready

pytestmark = pytest.mark.browser


def test_visitor_on_the_demo_page_gets_a_live_operator_reply(page, web_server, api, shot):
    # Given the demo page with the seeded widget's snippet
    page.goto(web_server.url("/demo/"))
    wait_ready(page)
    launcher = page.get_by_role("button", name="Open chat")
    expect(launcher).to_be_visible()
    shot(page, "closed")
    # Only the loader was fetched before the page's load event; widget.js and the config after it
    timing = page.evaluate(
        """() => ({load: performance.getEntriesByType('navigation')[0].loadEventStart,
                   resources: performance.getEntriesByType('resource').map(r => [r.name, r.startTime])})"""
    )
    ours = [(name, start) for name, start in timing["resources"] if web_server.base in name]
    assert [name for name, start in ours if start < timing["load"]] == [
        f"{web_server.base}/static/widget/loader.js?guid={web_server.seed['button_guid']}"
    ]
    assert any("/static/widget/widget.js" in name for name, _ in ours)
    assert any(name.endswith("/config") for name, _ in ours)

    # When the visitor opens the chat and sends a message with Enter
    launcher.click()
    expect(page.get_by_role("dialog", name="Demo widget")).to_be_visible()
    expect(page.get_by_role("button", name="Close chat").first).to_be_visible()
    chat_id = send_text(page, "Hello, I need help with my order")

    # Then an operator's reply posted through the REST API shows live, with its link rendered
    operator_reply(api, web_server, chat_id, {"type": "text", "body": "Sure! See https://example.com/orders"})
    reply = page.locator("chat-widget .msg:not(.me)", has_text="Sure!")
    expect(reply).to_be_visible()
    expect(reply.get_by_role("link", name="https://example.com/orders")).to_have_attribute(
        "href", "https://example.com/orders"
    )
    shot(page, "replied")

    # And the session survives a page load: the history comes back over the websocket replay
    page.reload()
    open_widget(page)
    expect(page.locator("chat-widget .msg.me", has_text="Hello, I need help")).to_be_visible()
    expect(page.locator("chat-widget .msg:not(.me)", has_text="Sure!")).to_be_visible()


def static_fetched(page, base: str) -> list[tuple[str, str]]:
    """(file, its `?v=` or "") of each of the widget's static files the page fetched, in order."""
    names = page.evaluate("performance.getEntriesByType('resource').map(r => r.name)")
    prefix = f"{base}/static/widget/"
    fetched = [urlsplit(name) for name in names if name.startswith(prefix)]
    return [(url.path.rsplit("/", 1)[1], parse_qs(url.query).get("v", [""])[0]) for url in fetched]


def test_the_first_paint_fetches_two_files_and_the_parts_come_when_a_view_needs_them(page, web_server, api, shot):
    # Given a visitor without a session on the demo page
    page.goto(web_server.url("/demo/"))
    wait_ready(page)
    expect(page.get_by_role("button", name="Open chat")).to_be_visible()

    # Then the launcher was drawn from the loader and widget.js alone, within the budget
    assert [name for name, _ in static_fetched(page, web_server.base)] == ["loader.js", "widget.js"]
    assert sum(gzipped(name) for name in ("loader.js", "widget.js")) <= FIRST_PAINT_MAX_GZIP

    # When the visitor opens the chat and picks an emoji
    open_widget(page)
    textbox = page.get_by_role("textbox", name="Type a message…")
    page.get_by_role("button", name="Emoji").click()
    page.get_by_role("button", name="🎉").click()
    expect(textbox).to_have_value("🎉")
    expect(textbox).to_be_focused()

    # And sends a message that an operator answers with a link
    chat_id = send_text(page, "🎉 Where is my parcel?")
    operator_reply(api, web_server, chat_id, {"type": "text", "body": "Track it at https://example.com/track"})
    reply = page.locator("chat-widget .msg:not(.me)", has_text="Track it")
    expect(reply.get_by_role("link", name="https://example.com/track")).to_have_attribute(
        "href", "https://example.com/track"
    )
    shot(page)

    # Then the emoji list's part and the links' part came then, once each, under their content hashes
    assert static_fetched(page, web_server.base)[2:] == [
        ("widget-extras.js", content_hash("widget-extras.js")),
        ("widget-links.js", content_hash("widget-links.js")),
    ]

    # And back on the page with the chat closed, the conversation comes back without a part
    page.reload()
    wait_ready(page)
    page.locator("chat-widget .msg:not(.me)", has_text="Track it").wait_for(state="attached")
    assert [name for name, _ in static_fetched(page, web_server.base)] == ["loader.js", "widget.js"]
    # until the window opens on it, its link drawn again
    page.locator(LAUNCHER).click()
    expect(reply.get_by_role("link", name="https://example.com/track")).to_be_visible()
    assert [name for name, _ in static_fetched(page, web_server.base)] == ["loader.js", "widget.js", "widget-links.js"]


def test_a_part_that_failed_to_come_is_asked_for_again(page, web_server, shot):
    # Given the first fetch of the extras part fails (a network hiccup)
    fetches = []

    def flaky(route):
        fetches.append(route.request.url)
        route.abort() if len(fetches) == 1 else route.continue_()

    page.route(re.compile(r".*/static/widget/widget-extras\.js\?v=.*"), flaky)
    page.goto(web_server.url("/demo/"))
    open_widget(page)
    emoji = page.get_by_role("button", name="Emoji")
    with page.expect_event("requestfailed") as failed:
        emoji.click()
    assert "/static/widget/widget-extras.js?v=" in failed.value.url
    expect(page.get_by_role("button", name="🎉")).to_have_count(0)
    # and redraws at once do not ask again (one fetch per redraw while the network is down)
    emoji.click()
    emoji.click()
    page.wait_for_timeout(500)
    assert len(fetches) == 1

    # When the visitor asks for the emoji list again after a few seconds
    page.wait_for_timeout(5_500)
    emoji.click()
    emoji.click()

    # Then the part is asked for again and the list shows
    expect(page.get_by_role("button", name="🎉")).to_be_visible()
    assert len(fetches) == 2
    shot(page)


def test_before_the_first_message_the_log_holds_the_greeting_alone(page, web_server, shot):
    # Given a visitor without a session on the demo page, the widget online
    page.goto(web_server.url("/demo/"))

    # When the visitor opens the chat
    open_widget(page)
    expect(page.get_by_role("textbox", name="Type a message…")).to_be_visible()

    # Then the log holds the greeting and nothing else (no stray text from a falsy condition)
    log = page.get_by_role("log")
    expect(log.locator(".msg")).to_have_count(1)
    assert log.inner_text().strip() == log.locator(".msg").inner_text().strip()
    shot(page, "greeting-alone")


def test_the_emoji_button_is_an_icon_that_needs_no_emoji_font(page, web_server, shot):
    # Given the open chat on the demo page
    page.goto(web_server.url("/demo/"))
    open_widget(page)

    # Then the emoji picker's button draws an SVG icon, like the attach button, and no text glyph
    button = page.get_by_role("button", name="Emoji")
    expect(button.locator("svg")).to_have_count(1)
    assert button.inner_text().strip() == ""
    shot(page, "emoji-button")


def test_a_reply_sent_while_the_socket_is_down_shows_after_the_reconnect(page, web_server, api, shot):
    # Given the visitor's socket runs through a route the test can cut
    sockets, state = [], {"down": False}

    def route(ws):
        sockets.append(ws.url)
        if state["down"]:
            ws.close(code=1011, reason="test: network down")
            return
        server = ws.connect_to_server()
        state["page_side"], state["server_side"] = ws, server

    page.route_web_socket(re.compile(r".*/ws/visitor/.*"), route)
    page.goto(web_server.url("/demo/"))
    open_widget(page)
    chat_id = send_text(page, "Are you there?")
    first = operator_reply(api, web_server, chat_id, {"type": "text", "body": "Yes, one moment"})
    expect(page.locator("chat-widget .msg", has_text="Yes, one moment")).to_be_visible()

    # When the connection drops and the operator replies meanwhile
    state["down"] = True
    state["server_side"].close()
    state["page_side"].close(code=1011, reason="test: dropped")
    expect(page.get_by_role("status").filter(has_text="Reconnecting")).to_be_visible()
    operator_reply(api, web_server, chat_id, {"type": "text", "body": "Here is your answer"})
    page.wait_for_timeout(1200)
    expect(page.locator("chat-widget .msg", has_text="Here is your answer")).to_have_count(0)
    shot(page, "down")

    # Then after the network is back the widget reconnects with `since` and shows the reply once
    state["down"] = False
    expect(page.locator("chat-widget .msg", has_text="Here is your answer")).to_have_count(1, timeout=20_000)
    since = [int(m.group(1)) for url in sockets[1:] if (m := re.search(r"since=(\d+)", url))]
    assert since and max(since) >= first["id"]
    expect(page.locator("chat-widget .msg", has_text="Yes, one moment")).to_have_count(1)
    shot(page, "after")


def test_the_widget_works_on_a_hostile_page_under_a_strict_csp(page, web_server, api, host_pages, shot):
    # Given a customer page that unsets every style and hides every button, under a CSP that allows
    # only its nonce and our origin
    nonce = secrets.token_urlsafe(16)
    origin, ws_origin = web_server.base, web_server.ws_base
    csp = (
        f"default-src 'none'; script-src 'nonce-{nonce}' {origin}; style-src 'nonce-{nonce}'; "
        f"connect-src {origin} {ws_origin}; img-src {origin} data:; font-src 'none'"
    )
    guid = web_server.seed["button_guid"]
    url = host_pages.add(
        "/hostile.html",
        f"""<!doctype html><html><head><title>Hostile</title>
<style nonce="{nonce}">* {{all: unset; font-size: 40px !important}} button {{display: none !important}}
div, span, p {{color: red !important; background: yellow !important}}</style>
<script nonce="{nonce}">window.violations = [];
document.addEventListener("securitypolicyviolation", e => violations.push(e.violatedDirective + " " + e.blockedURI));</script>
</head><body><p>A page with hostile global CSS.</p>
<script nonce="{nonce}" src="{origin}/static/widget/loader.js?guid={guid}" async></script></body></html>""",
        {"Content-Security-Policy": csp},
    )
    page.goto(url)
    wait_ready(page)

    # Then the launcher is a visible button of the widget's own size in the corner
    launcher = page.get_by_role("button", name="Open chat")
    expect(launcher).to_be_visible()
    box = launcher.bounding_box()
    assert box["width"] == pytest.approx(75, abs=1) and box["height"] == pytest.approx(75, abs=1)
    assert box["x"] > 1280 - 75 - 40 and box["y"] > 800 - 75 - 40

    # And the chat opens and works, with the widget's own font size, and nothing was refused by the CSP
    launcher.click()
    dialog = page.get_by_role("dialog")
    expect(dialog).to_be_visible()
    assert page.locator("chat-widget .head h2").evaluate("e => getComputedStyle(e).fontSize") == "16px"
    assert page.locator("chat-widget .log").evaluate("e => getComputedStyle(e).backgroundColor") != "rgb(255, 255, 0)"
    chat_id = send_text(page, "Hello from a strict page")
    operator_reply(
        api, web_server, chat_id, {"type": "text", "body": "Welcome, strict page: https://example.com/strict"}
    )
    # (its link drawn by the links part, which came with the loader's nonce)
    reply = page.locator("chat-widget .msg", has_text="Welcome, strict page")
    expect(reply.get_by_role("link", name="https://example.com/strict")).to_be_visible()
    assert page.evaluate("window.violations") == []
    # One global at most: the documented namespace
    assert page.evaluate("typeof window.ChatWidget.open") == "function"
    shot(page)


def test_arabic_is_drawn_right_to_left(browser, start_server, live_var, shot):
    # Given a widget that supports Arabic and a visitor whose browser prefers it
    server = start_server(**SERVER_ENV)
    api = api_client(server)
    response = api(
        "PATCH",
        "/api/v1/widget/settings",
        json={"widget_supported_languages": ["ru", "en", "ar"]},
        headers={"X-Service-Idempotency-Key": secrets.token_hex(8)},
    )
    assert response.status_code == 200, response.text
    add_operator(live_var, server.seed["button_guid"])
    with console_open(browser, server):
        _arabic(browser, server, shot)


def _arabic(browser, server, shot):
    context = browser.new_context(locale="ar", viewport={"width": 1280, "height": 800})
    page = context.new_page()
    page.goto(server.url("/demo/"))

    # When the visitor opens the chat
    wait_ready(page)
    page.get_by_role("button", name="افتح المحادثة").click()

    # Then the widget speaks Arabic, right to left
    root = page.locator("chat-widget .cw")
    expect(root).to_have_attribute("dir", "rtl")
    expect(root).to_have_attribute("lang", "ar")
    expect(page.get_by_role("textbox", name="اكتب رسالة…")).to_be_visible()
    expect(page.get_by_role("button", name="إرسال")).to_be_visible()
    send_text(page, "مرحبا", name="اكتب رسالة…")
    shot(page)

    # And the page's API switches the language at run time
    page.evaluate("ChatWidget.setLanguage('en')")
    expect(root).to_have_attribute("dir", "ltr")
    expect(page.get_by_role("textbox", name="Type a message…")).to_be_visible()
    context.close()


def test_the_offline_form_when_no_operator_is_online(page, start_server, live_var, shot):
    # Given a widget whose operators have no console open (the AI is off: nobody answers)
    server = start_server(**SERVER_ENV)
    page.goto(server.url("/demo/"))
    open_widget(page)

    # When the visitor fills the offline form
    form = page.get_by_role("form", name="Leave us a message")
    expect(form).to_be_visible()
    expect(page.locator("chat-widget .head")).to_contain_text("Offline")
    # and the header promises no quick reply while nobody is online
    expect(page.locator("chat-widget .head")).not_to_contain_text("We usually reply")
    expect(page.get_by_role("textbox", name="Type a message…")).to_have_count(0)
    shot(page, "form")
    form.get_by_label("Name").fill("Ann")
    form.get_by_label("E-mail").fill("ann@example.com")
    form.get_by_label("Message").fill("Please call me back tomorrow")
    form.get_by_role("button", name="Send message").click()

    # Then it is thanked and the message reached the service
    expect(page.get_by_text("Thank you! We will get back to you soon.")).to_be_visible()
    shot(page, "sent")
    chats = api_client(server)("GET", "/api/v1/chats").json()["data"]
    assert chats, "the offline message made no chat"
    messages = api_client(server)("GET", f"/api/v1/chats/{chats[0]['id']}/messages").json()["data"]
    assert any("Please call me back tomorrow" in (m.get("body") or "") for m in messages)


def test_the_widget_switches_live_as_the_operator_comes_goes_away_and_leaves(
    browser, page, start_server, live_var, host_pages, shot
):
    # Given a customer page whose snippet reads presence every second while the chat is open, and
    # an operator of the widget with no console open
    server = start_server(**SERVER_ENV)
    add_operator(live_var, server.seed["button_guid"])
    url = host_pages.add(
        "/shop.html",
        f"""<!doctype html><html><head><title>Shop</title></head><body><p>A shop.</p>
<script src="{server.base}/static/widget/loader.js?guid={server.seed["button_guid"]}" data-presence-poll="1" async></script>
</body></html>""",
    )
    page.goto(url)
    open_widget(page)
    head = page.locator("chat-widget .head")
    offline_form = page.get_by_role("form", name="Leave us a message")
    textbox = page.get_by_role("textbox", name="Type a message…")
    expect(offline_form).to_be_visible()
    expect(head).to_contain_text("Offline")

    # When the operator signs in to the console, the open widget turns to the chat without a reload
    console = browser.new_context(viewport={"width": 1280, "height": 800}, locale="en-US").new_page()
    try:
        sign_in(console, server)
        expect(textbox).to_be_visible()
        expect(offline_form).to_have_count(0)
        expect(head).to_contain_text("Online")
        shot(page, "online")

        # When they switch to away, the widget offers the form again; back online, the chat
        console.locator("#presence").click()
        expect(console.locator("#presence")).to_have_text("Away")
        expect(offline_form).to_be_visible()
        expect(head).to_contain_text("Offline")
        shot(page, "away")
        console.locator("#presence").click()
        expect(console.locator("#presence")).to_have_text("Online")
        expect(textbox).to_be_visible()

        # And the visitor can write while the operator is there
        send_text(page, "Caught you online")
    finally:
        # When the console closes (its socket goes away), the widget is offline again
        console.context.close()
    expect(head).to_contain_text("Offline")
    shot(page, "left")


def test_a_keyboard_message_is_drawn_as_link_buttons(page, web_server, api, shot):
    page.goto(web_server.url("/demo/"))
    open_widget(page)
    chat_id = send_text(page, "Which plan fits me?")

    operator_reply(
        api,
        web_server,
        chat_id,
        {
            "type": "keyboard",
            "body": "Pick one",
            "keyboard": {
                "buttons": [
                    {"label": "Pricing", "url": "https://example.com/pricing"},
                    {"label": "Docs", "url": "https://example.com/docs", "style": "secondary"},
                ]
            },
        },
    )

    message = page.locator("chat-widget .msg[data-type=keyboard]")
    expect(message).to_contain_text("Pick one")
    expect(message.get_by_role("link", name="Pricing")).to_have_attribute("href", "https://example.com/pricing")
    expect(message.get_by_role("link", name="Docs")).to_have_attribute("href", "https://example.com/docs")
    expect(message.get_by_role("link", name="Docs")).to_have_attribute("target", "_blank")
    shot(page)


def test_the_js_api_opens_identifies_and_reports_events(page, web_server, host_pages, shot):
    guid = web_server.seed["button_guid"]
    url = host_pages.add(
        "/api.html",
        f"""<!doctype html><title>API</title><body><script>
window.events = [];
function jivo_onOpen() {{ events.push("jivo_onOpen"); }}
</script>
<script src="{web_server.base}/static/widget/loader.js?guid={guid}" data-consent="required" async></script>
<script>
window.addEventListener("load", () => {{
  ChatWidget.on("open", () => events.push("open")).on("close", () => events.push("close"));
  ChatWidget.identify({{name: "Ann", email: "ann@example.com"}});
}});
</script></body>""",
    )
    page.goto(url)
    page.wait_for_load_state("load")

    # Consent required: nothing mounts before grantConsent
    page.wait_for_timeout(300)
    expect(page.locator("chat-widget")).to_have_count(0)
    page.evaluate("ChatWidget.grantConsent(); ChatWidget.open()")
    wait_ready(page)
    expect(page.get_by_role("dialog")).to_be_visible()
    page.evaluate("ChatWidget.close()")
    expect(page.get_by_role("dialog")).to_be_hidden()
    assert page.evaluate("events") == ["open", "jivo_onOpen", "close"]
    expect(page.locator(LAUNCHER)).to_be_focused()
    shot(page)


PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360f80f0000010100005a4d6e0a0000000049454e44ae426082"
)


def test_an_image_is_uploaded_sent_and_shown_and_the_chat_rated(page, web_server, api, shot):
    page.goto(web_server.url("/demo/"))
    open_widget(page)
    chat_id = send_text(page, "Here is a screenshot")

    # When the visitor attaches an image
    page.locator("chat-widget input[type=file]").set_input_files(
        files=[{"name": "shot.png", "mimeType": "image/png", "buffer": PNG}]
    )

    # Then it is uploaded, sent as an image message and drawn from its signed URL
    image = page.locator("chat-widget .msg.me[data-type=image] img")
    expect(image).to_be_visible()
    expect(image).to_have_attribute("alt", "shot.png")
    assert image.evaluate("img => img.decode().then(() => img.naturalWidth)") == 1

    # And after the operator answers and requests a rating, the visitor rates the chat
    operator_reply(api, web_server, chat_id, {"type": "text", "body": "Got it, thanks"})
    requested = api(
        "POST", f"/api/v1/chats/{chat_id}/rate-request", headers={"X-Service-Idempotency-Key": secrets.token_hex(8)}
    )
    assert requested.status_code == 202, requested.text
    stars = page.get_by_role("group", name="Rate this chat")
    expect(stars).to_be_visible()
    with page.expect_response(lambda r: r.url.endswith("/rating") and r.request.method == "POST") as rated:
        stars.get_by_role("button", name="5 of 5").click()
    assert rated.value.status == 201
    expect(page.get_by_text("Thank you for your rating!")).to_be_visible()
    expect(stars).to_have_count(0)
    shot(page)


def test_device_profiles_position_the_mobile_launcher_and_colours_keep_their_contrast(browser, start_server, shot):
    # Given a widget whose mobile profile puts a small launcher bottom left with another icon
    server = start_server(**SERVER_ENV)
    response = api_client(server)(
        "PATCH",
        "/api/v1/widget/settings",
        json={
            "widget_skin": "rounded",
            "device_profiles": {
                "mobile": {"widget_button_size": 50, "widget_position": "bottom_left", "icon_preset": "headset"}
            },
        },
        headers={"X-Service-Idempotency-Key": secrets.token_hex(8)},
    )
    assert response.status_code == 200, response.text

    for viewport, size, left in (
        ({"width": 390, "height": 844}, 50, True),
        ({"width": 1280, "height": 800}, 75, False),
    ):
        context = browser.new_context(viewport=viewport)
        page = context.new_page()
        page.goto(server.url("/demo/"))
        wait_ready(page)

        # Then the launcher follows the profile of the device
        box = page.get_by_role("button", name="Open chat").bounding_box()
        assert box["width"] == pytest.approx(size, abs=1)
        assert (box["x"] < viewport["width"] / 2) is left
        assert page.locator("chat-widget .cw").get_attribute("class").split()[1] == "skin-rounded"
        page.get_by_role("button", name="Open chat").click()
        if left:  # a phone: the chat takes the whole screen
            window = page.get_by_role("dialog").bounding_box()
            assert window["width"] == pytest.approx(390, abs=1)
            shot(page, "mobile")

        # And the header's text reads against its background (WCAG AA, 4.5:1)
        ratio = page.locator("chat-widget .head").evaluate(
            """head => {
              const rgb = s => s.match(/\\d+/g).slice(0, 3).map(Number);
              const lum = c => { const l = c.map(v => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; });
                                 return 0.2126 * l[0] + 0.7152 * l[1] + 0.0722 * l[2]; };
              const style = getComputedStyle(head);
              const [a, b] = [lum(rgb(style.color)), lum(rgb(style.backgroundColor))].sort((x, y) => y - x);
              return (a + 0.05) / (b + 0.05);
            }"""
        )
        assert ratio >= 4.5
        context.close()


def test_a_reply_to_a_closed_widget_shows_an_unread_badge_and_calls_the_message_callback(page, web_server, api, shot):
    page.goto(web_server.url("/demo/"))
    open_widget(page)
    chat_id = send_text(page, "I'll wait")
    page.evaluate("window.got = []; ChatWidget.on('message', m => got.push(m.body))")
    page.get_by_role("button", name="Close chat").first.click()
    expect(page.get_by_role("dialog")).to_be_hidden()

    # When the operator replies while the chat is closed
    operator_reply(api, web_server, chat_id, {"type": "text", "body": "Back to you"})

    # Then the launcher carries an unread badge and the page's callback got the message
    badge = page.locator("chat-widget .badge")
    expect(badge).to_have_text("1")
    expect(badge).to_have_attribute("aria-label", "1 unread")
    assert page.evaluate("got") == ["Back to you"]
    shot(page)

    # And opening the chat clears it; the message is marked seen, so a reload raises no badge again
    page.get_by_role("button", name="Open chat").click()
    expect(badge).to_have_count(0)
    page.wait_for_timeout(500)
    page.reload()
    wait_ready(page)
    page.wait_for_timeout(1000)
    expect(badge).to_have_count(0)


def test_typing_both_ways_and_seen(page, web_server, api, shot):
    # Given the widget's socket frames are recorded on their way to the server
    sent, received = [], []

    def route(ws):
        server = ws.connect_to_server()
        ws.on_message(lambda message: (sent.append(json.loads(message)), server.send(message)))
        server.on_message(lambda message: (received.append(json.loads(message)), ws.send(message)))

    page.route_web_socket(re.compile(r".*/ws/visitor/.*"), route)
    page.goto(web_server.url("/demo/"))
    open_widget(page)
    chat_id = send_text(page, "First question")

    # When the operator types (REST), the visitor sees it; when it stops, it goes
    def typing(state):
        response = api(
            "POST",
            f"/api/v1/chats/{chat_id}/typing",
            json={"state": state},
            headers={"X-Service-Idempotency-Key": secrets.token_hex(8)},
        )
        assert response.status_code in (200, 202), response.text

    # (a typing frame is live only, never replayed: one pushed before the widget's socket joined is
    # lost, so the operator types again after the 5 s throttle, as a typing console does)
    indicator = page.get_by_role("status").filter(has_text="Operator is typing…")
    for _ in range(3):
        typing("start")
        try:
            expect(indicator).to_be_visible(timeout=6000)
            break
        except AssertionError:
            continue
    expect(indicator).to_be_visible()
    shot(page)
    typing("stop")
    expect(indicator).to_have_count(0)

    # And the visitor's typing goes to the server as typing frames, accepted without an error
    page.get_by_role("textbox", name="Type a message…").press_sequentially("Second", delay=20)
    for _ in range(50):
        if {"type": "typing", "state": "start"} in sent:
            break
        page.wait_for_timeout(100)
    assert {"type": "typing", "state": "start"} in sent

    # And an operator message read in the open widget is reported seen
    reply = operator_reply(api, web_server, chat_id, {"type": "text", "body": "Answer"})
    expect(page.locator("chat-widget .msg", has_text="Answer")).to_be_visible()
    for _ in range(50):
        if {"type": "seen", "message_id": reply["id"]} in sent:
            break
        page.wait_for_timeout(100)
    assert {"type": "seen", "message_id": reply["id"]} in sent
    assert not [frame for frame in received if frame.get("event") == "error"]


def test_the_prechat_form_names_the_visitor_before_the_first_message(browser, page, start_server, live_var, shot):
    server = start_server(**SERVER_ENV)
    add_operator(live_var, server.seed["button_guid"])
    with console_open(browser, server):
        _prechat(page, server, shot)


def _prechat(page, server, shot):
    api = api_client(server)
    response = api(
        "PATCH",
        "/api/v1/widget/settings",
        json={"widget_prechat_form_enabled": True, "widget_prechat_fields": ["name", "phone"]},
        headers={"X-Service-Idempotency-Key": secrets.token_hex(8)},
    )
    assert response.status_code == 200, response.text
    page.goto(server.url("/demo/"))
    open_widget(page)

    # When the visitor introduces themselves
    form = page.get_by_role("form", name="Please introduce yourself before we start.")
    expect(form).to_be_visible()
    expect(form.get_by_label("E-mail")).to_have_count(0)
    shot(page)
    form.get_by_label("Name").fill("Boris")
    form.get_by_label("Phone").fill("+7 900 000-00-00")
    form.get_by_role("button", name="Start chat").click()

    # Then the chat starts and its contact carries the details
    chat_id = send_text(page, "Hello, it's Boris")
    chat = api("GET", f"/api/v1/chats/{chat_id}").json()
    contact = api("GET", f"/api/v1/contacts/{chat['client_id']}").json()
    assert (contact["name"], contact["phone"]) == ("Boris", "+7 900 000-00-00")


def test_the_greeting_is_the_tenants_text_translated_per_language(browser, start_server, live_var, shot):
    # Given a greeting written in English with a manual Russian translation, and an operator online
    # (the greeting opens the conversation, which the offline form replaces when nobody is)
    server = start_server(**SERVER_ENV)
    add_operator(live_var, server.seed["button_guid"])
    with console_open(browser, server):
        _greeting(browser, server, shot)


def _greeting(browser, server, shot):
    response = api_client(server)(
        "PATCH",
        "/api/v1/widget/settings",
        json={
            "widget_greeting": "Hi from the shop!",
            "widget_greeting_delay_sec": 0,
            "widget_text_translations": {"ru": {"widget_greeting": "Привет из магазина!"}},
        },
        headers={"X-Service-Idempotency-Key": secrets.token_hex(8)},
    )
    assert response.status_code == 200, response.text

    for locale, greeting, launcher in (
        ("ru-RU", "Привет из магазина!", "Открыть чат"),
        ("en-US", "Hi from the shop!", "Open chat"),
    ):
        context = browser.new_context(locale=locale)
        page = context.new_page()
        page.goto(server.url("/demo/"))
        wait_ready(page)

        # Then the greeting bubble next to the launcher speaks the visitor's language
        expect(page.locator("chat-widget .bubble")).to_have_text(greeting)
        expect(page.get_by_role("button", name=launcher)).to_be_visible()
        shot(page, locale)

        # And it opens the conversation too
        page.get_by_role("button", name=launcher).click()
        expect(page.locator("chat-widget .log .msg").first).to_have_text(greeting)
        context.close()
