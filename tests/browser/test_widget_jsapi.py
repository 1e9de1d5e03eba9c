"""The widget's JavaScript API in Chromium against the real web process, from a host page on another
origin: calls made right after the loader tag are queued and run before `ready`; `show`/`hide`,
`open({message})` (pre-filled, not sent), `send(text)`; the events `ready`, `open`, `close`,
`message`, `chat:started`, `chat:closed` and `unread`; the legacy `jivo_api` and its hooks; and the
docs' example page (docs/integrating/widget-example.html) driving each call against the service."""

from __future__ import annotations

import json
import secrets
from pathlib import Path

import pytest
import requests
from playwright.sync_api import expect

from tests.browser.widget_pages import LAUNCHER, operator_reply, wait_ready

pytestmark = pytest.mark.browser

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "integrating" / "widget-example.html"
EVENTS = ["ready", "open", "close", "message", "chat:started", "chat:closed", "unread"]
COMPOSER = "chat-widget textarea"


def write(call, method: str, path: str, body: dict) -> dict:
    response = call(method, path, json=body, headers={"X-Service-Idempotency-Key": secrets.token_hex(8)})
    assert response.status_code in (200, 201, 202), response.text
    return response.json()


def host(host_pages, web_server, path: str, *, before: str = "", after: str = "", loader: str = "") -> str:
    """A host page with the snippet (synchronous unless `loader` says otherwise: then the handlers
    are added at the page's load event, when an async loader has run), `before` it and `after` it in
    script tags; every event lands in `window.events` as [name, payload]."""
    guid = web_server.seed["button_guid"]
    record = "".join(
        f"ChatWidget.on({json.dumps(e)}, (p) => events.push([{json.dumps(e)}, p ?? null]));" for e in EVENTS
    )
    return host_pages.add(
        path,
        f"""<!doctype html><html lang="en"><title>Host</title><body><h1>Host page</h1>
<script>window.events = []; {before}</script>
<script src="{web_server.base}/static/widget/loader.js?guid={guid}" {loader}></script>
<script>{f"addEventListener('load', () => {{ {record} }});" if loader else record} {after}</script>
</body></html>""",
    )


def api_ready(page) -> None:
    """The widget has fired `ready` (the host attribute `data-ready` comes a moment before it)."""
    wait_ready(page)
    page.wait_for_function("events.some(([n]) => n === 'ready')")


def events(page, name: str | None = None) -> list:
    seen = page.evaluate("events")
    return [p for n, p in seen if n == name] if name else [n for n, _ in seen]


def test_calls_made_right_after_the_loader_run_before_ready_and_open_prefills_without_sending(
    page, web_server, host_pages
):
    url = host(
        host_pages,
        web_server,
        "/queued.html",
        before="window.jivo_onLoadCallback = () => events.push(['jivo_onLoadCallback', typeof jivo_api]);",
        after='ChatWidget.hide().open({message: "Where is my order?"}).send("   ");',
    )
    page.goto(url)
    api_ready(page)

    # The queued calls ran in order, then `ready` (once), then the legacy load hook with jivo_api there
    expect(page.get_by_role("dialog")).to_be_visible()
    assert events(page) == ["open", "ready", "jivo_onLoadCallback"]
    assert events(page, "jivo_onLoadCallback") == ["object"]
    # open({message}) put the text in the composer and sent nothing (the blank send was ignored too)
    expect(page.locator(COMPOSER)).to_have_value("Where is my order?")
    expect(page.locator("chat-widget .msg.me")).to_have_count(0)
    stored = page.evaluate(f"JSON.parse(localStorage.getItem('chatwidget:{web_server.seed['button_guid']}') || '{{}}')")
    assert not stored.get("token"), "no session was made"
    # hide() hid the launcher; the window opened by open() is there all the same
    expect(page.locator(LAUNCHER)).to_have_count(0)

    # A `ready` handler added after ready runs at once, and only it
    page.evaluate("ChatWidget.on('ready', () => events.push(['late ready', null]))")
    assert events(page)[-1] == "late ready"
    assert events(page).count("ready") == 1

    # Closing leaves the widget hidden; show() brings the launcher back
    page.evaluate("ChatWidget.close()")
    expect(page.get_by_role("dialog")).to_be_hidden()
    expect(page.locator(LAUNCHER)).to_have_count(0)
    assert events(page)[-1] == "close"
    page.evaluate("ChatWidget.show()")
    expect(page.locator(LAUNCHER)).to_be_visible()

    # hide() on an open widget closes it too
    page.evaluate("ChatWidget.open()")
    expect(page.get_by_role("dialog")).to_be_visible()
    page.evaluate("ChatWidget.hide()")
    expect(page.get_by_role("dialog")).to_be_hidden()
    expect(page.locator(LAUNCHER)).to_have_count(0)
    assert events(page)[-2:] == ["open", "close"]


def test_calls_queued_before_the_loader_ran_are_taken_over(page, web_server, host_pages):
    url = host(
        host_pages,
        web_server,
        "/stub.html",
        before="""window.ChatWidget = {q: [
  ['hide', []], ['send', ['Queued before the loader']], ['on', ['ready', () => events.push(['stub ready', null])]]]};""",
        loader="async",
    )
    page.goto(url)
    api_ready(page)
    page.wait_for_function("events.some(([n]) => n === 'stub ready')")
    expect(page.locator(LAUNCHER)).to_have_count(0)
    # The queued send made the chat (the page's handlers, added at its load event, heard it)
    page.wait_for_function("events.some(([n]) => n === 'chat:started')")
    page.evaluate("ChatWidget.open()")
    expect(page.locator("chat-widget .msg.me", has_text="Queued before the loader")).to_be_visible()


def test_send_starts_the_chat_and_the_events_follow_it_to_its_close(page, web_server, host_pages, api):
    page.goto(host(host_pages, web_server, "/send.html"))
    api_ready(page)

    # send() writes as the visitor: a session and the chat, `chat:started` once
    page.evaluate("ChatWidget.send('Hello from the page'); ChatWidget.send('And a second line')")
    page.wait_for_function("events.filter(([n]) => n === 'chat:started').length === 1")
    (started,) = events(page, "chat:started")
    chat_id = started["chat_id"]
    assert isinstance(chat_id, int) and chat_id > 0
    # `chat:started` follows the first post's answer; the second send posts after it.
    texts = []
    for _ in range(100):
        stored = sorted(api("GET", f"/api/v1/chats/{chat_id}/messages").json()["data"], key=lambda m: m["id"])
        texts = [m["body"] for m in stored]
        if len(texts) >= 2:
            break
        page.wait_for_timeout(100)
    assert texts[:2] == ["Hello from the page", "And a second line"]
    assert events(page).count("chat:started") == 1
    assert "open" not in events(page)  # send() does not open the window

    # An operator's reply while the window is closed: `message`, then `unread` counts it
    operator_reply(api, web_server, chat_id, {"type": "text", "body": "Hi, how can I help?"})
    page.wait_for_function("events.some(([n]) => n === 'unread')")
    assert [m["body"] for m in events(page, "message")] == ["Hi, how can I help?"]
    assert events(page, "unread") == [{"count": 1}]
    expect(page.locator("chat-widget .badge")).to_have_text("1")

    # Opening reads it: the count is 0 again
    page.locator(LAUNCHER).click()
    page.wait_for_function("events.filter(([n]) => n === 'unread').length === 2")
    assert events(page, "unread") == [{"count": 1}, {"count": 0}]

    # The operator closes the chat: `chat:closed` with its id, once
    write(api, "POST", f"/api/v1/chats/{chat_id}/close", {})
    page.wait_for_function("events.some(([n]) => n === 'chat:closed')")
    assert events(page, "chat:closed") == [{"chat_id": chat_id}]

    # A reload finds the close already known: no second `chat:closed`, and writing on is no new chat
    page.reload()
    api_ready(page)
    page.evaluate("ChatWidget.send('One more thing')")
    expect(page.locator("chat-widget .msg.me", has_text="One more thing")).to_have_count(1)
    assert "chat:closed" not in events(page)
    assert "chat:started" not in events(page)


def test_the_legacy_jivo_api_drives_the_widget(page, web_server, host_pages, api):
    url = host(
        host_pages,
        web_server,
        "/jivo.html",
        before="""function jivo_onOpen() { events.push(['jivo_onOpen', null]); }
function jivo_onClose() { events.push(['jivo_onClose', null]); }
function jivo_onMessageReceived(m) { events.push(['jivo_onMessageReceived', m.body]); }""",
        loader="async",
    )
    page.goto(url)
    api_ready(page)

    assert page.evaluate("jivo_api.open()") == {"result": "ok"}
    expect(page.get_by_role("dialog")).to_be_visible()
    assert page.evaluate("jivo_api.close()") == {"result": "ok"}
    expect(page.get_by_role("dialog")).to_be_hidden()
    assert events(page) == ["ready", "open", "jivo_onOpen", "close", "jivo_onClose"]

    # setCustomData's fields become attributes, named by key, else by title (the rest left out)
    page.evaluate("window.given = []; ChatWidget.setAttributes = (v) => (given.push(v), ChatWidget); 0")
    page.evaluate(
        """jivo_api.setCustomData([
  {title: 'Order number', content: '1042'}, {key: 'plan', title: 'Plan', content: 'pro'},
  {content: 'a note without a name'}, {title: 'Заказ', content: 'left out'}])"""
    )
    assert page.evaluate("given") == [{"order_number": "1042", "plan": "pro"}]

    # setContactInfo is identify (sent with the session), sendMessage is send
    page.evaluate("jivo_api.setContactInfo({name: 'Jane Legacy', email: 'jane@example.com', description: 'x'})")
    page.evaluate("jivo_api.sendMessage('Sent the old way')")
    page.wait_for_function("events.some(([n]) => n === 'chat:started')")
    (started,) = events(page, "chat:started")
    chat = api("GET", f"/api/v1/chats/{started['chat_id']}").json()
    contact = api("GET", f"/api/v1/contacts/{chat['client_id']}").json()
    assert (contact["name"], contact["email"]) == ("Jane Legacy", "jane@example.com")

    operator_reply(api, web_server, started["chat_id"], {"type": "text", "body": "Welcome back"})
    page.wait_for_function("events.some(([n]) => n === 'jivo_onMessageReceived')")
    assert events(page, "jivo_onMessageReceived") == ["Welcome back"]


def test_a_page_that_has_its_own_jivo_api_keeps_it(page, web_server, host_pages):
    page.goto(host(host_pages, web_server, "/own-jivo.html", before="window.jivo_api = {mine: true};"))
    api_ready(page)
    assert page.evaluate("jivo_api") == {"mine": True}


def test_the_docs_example_page_runs_each_call_against_the_service(page, web_server, host_pages, shot):
    guid = web_server.seed["button_guid"]
    url = host_pages.add("/widget-example.html", EXAMPLE.read_text())
    page.goto(f"{url}?origin={web_server.base}&guid={guid}")
    log = page.locator("#log")
    expect(log).to_contain_text("event ready")
    expect(log).to_contain_text("jivo_onLoadCallback()")

    def call(label: str) -> None:
        page.get_by_role("button", name=label, exact=True).click()

    call("open({message})")
    expect(page.get_by_role("dialog")).to_be_visible()
    expect(page.locator(COMPOSER)).to_have_value("I have a question about my order")
    expect(log).to_contain_text("event open")
    call("close()")
    expect(log).to_contain_text("event close")
    call("hide()")
    expect(page.locator(LAUNCHER)).to_have_count(0)
    call("show()")
    expect(page.locator(LAUNCHER)).to_be_visible()
    call("identify({name, email})")
    call("send(text)")
    expect(log).to_contain_text("event chat:started")
    call("open()")
    expect(page.locator("chat-widget .msg.me", has_text="Hello from the example page")).to_be_visible()
    call('setLanguage("ru")')
    expect(page.locator("chat-widget .cw")).to_have_attribute("lang", "ru")
    call("jivo_api.open()")
    expect(log).to_contain_text('answer {"result":"ok"}')
    shot(page)
    page.set_viewport_size({"width": 390, "height": 844})
    page.locator(LAUNCHER).click()
    shot(page, "390")


def test_the_example_page_opened_from_disk_loads_the_widget_from_its_form(page, web_server):
    page.goto(EXAMPLE.as_uri())
    expect(page.locator("#origin")).to_have_value("http://127.0.0.1:8000")
    page.locator("#origin").fill(web_server.base)
    page.locator("#guid").fill(web_server.seed["button_guid"])
    page.get_by_role("button", name="Load the widget").click()
    expect(page.locator("#log")).to_contain_text("event ready")
    # A page with no origin of its own (file://) still makes a session and a chat
    page.get_by_role("button", name="send(text)", exact=True).click()
    expect(page.locator("#log")).to_contain_text("event chat:started")
    assert requests.get(web_server.url("/static/widget/chat-widget.d.ts"), timeout=15).ok
