"""The console's alerts in Chromium: the tab's title counts the visitor messages that arrive while the
page is hidden, and with the Alerts switch on a visitor message elsewhere plays a tone and, while the
page is hidden, shows a desktop notification that opens its chat.

Headless Chromium has no desktop to show notifications on and no window to hide: an init script
records what the page asks of the browser's `Notification` (permission granted) and of its
`AudioContext` (each tone started), and makes `document.hidden` follow `window.__hidden`.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.console_pages import WAIT, connected, sign_in, start_console_server
from tests.browser.test_console import Visitor

pytestmark = pytest.mark.browser

BROWSER = """
window.__notices = [];
window.__tones = 0;
window.__hidden = false;
Object.defineProperty(Document.prototype, "hidden", { configurable: true, get() { return !!window.__hidden; } });
Object.defineProperty(Document.prototype, "visibilityState", {
  configurable: true, get() { return window.__hidden ? "hidden" : "visible"; }
});
class RecordedNotification {
  constructor(title, options) {
    this.title = title; this.body = options.body; this.tag = options.tag;
    window.__notices.push(this);
  }
  close() {}
}
RecordedNotification.permission = "granted";
RecordedNotification.requestPermission = () => Promise.resolve("granted");
window.Notification = RecordedNotification;
const start = OscillatorNode.prototype.start;
OscillatorNode.prototype.start = function (...args) { window.__tones += 1; return start.apply(this, args); };
"""


@pytest.fixture(scope="module")
def console_server(live_template, tmp_path_factory):
    with start_console_server(live_template, tmp_path_factory) as server:
        yield server


def hide(page, hidden: bool) -> None:
    page.evaluate("(h) => { window.__hidden = h; document.dispatchEvent(new Event('visibilitychange')); }", hidden)


def notices(page) -> list[dict]:
    return page.evaluate("window.__notices.map(n => ({title: n.title, body: n.body, tag: n.tag}))")


def tones(page) -> int:
    return page.evaluate("window.__tones")


def test_alerts_count_sound_and_notify_while_the_operator_looks_elsewhere(page, console_server, shot):
    # Given an operator on the chat list, with alerts off (the default)
    page.add_init_script(BROWSER)
    sign_in(page, console_server)
    alerts = page.get_by_role("button", name="Alerts off")
    expect(alerts).to_have_attribute("aria-pressed", "false")
    anna, boris = Visitor(console_server, name="Anna"), Visitor(console_server, name="Boris")
    chat_id = anna.say("Hello")["chat_id"]
    expect(page.locator(f'.chat-row[data-chat-id="{chat_id}"]')).to_be_visible(timeout=WAIT)

    # When the page is hidden and the visitor writes twice
    hide(page, True)
    anna.say("Where is my order?")
    anna.say("It is order 1042")

    # Then the title counts them, and nothing sounds or pops up (alerts are off)
    expect(page).to_have_title("(2) Operator console", timeout=WAIT)
    assert tones(page) == 0 and notices(page) == []

    # When the operator comes back, the count goes
    hide(page, False)
    expect(page).to_have_title("Operator console")

    # When the operator turns alerts on: a sample tone, and the switch says so and stays on
    alerts.click()
    expect(page.get_by_role("button", name="Alerts on")).to_have_attribute("aria-pressed", "true")
    assert tones(page) == 1
    shot(page, "alerts-on")
    page.reload()
    connected(page)
    expect(page.get_by_role("button", name="Alerts on")).to_be_visible()

    # And the page is hidden when a visitor writes
    hide(page, True)
    anna.say("Are you there?")

    # Then a tone, the count and a desktop notification with the text, for that chat
    expect(page).to_have_title("(1) Operator console", timeout=WAIT)
    assert tones(page) == 1  # counted since the reload
    assert notices(page) == [{"title": "New visitor message", "body": "Are you there?", "tag": f"chat-{chat_id}"}]

    # When the operator clicks the notification, the chat opens
    page.evaluate("window.__notices[0].onclick()")
    expect(page).to_have_url(console_server.url(f"/console/chats/{chat_id}/"), timeout=WAIT)
    connected(page)
    hide(page, False)
    expect(page.locator("#messages")).to_contain_text("Are you there?")

    # When the visitor of the open chat writes while the operator looks at it: no alert
    anna.say("Thanks!")
    expect(page.locator("#messages")).to_contain_text("Thanks!", timeout=WAIT)
    # When another visitor writes meanwhile: a tone, but no notification (the page is in view)
    other_id = boris.say("A question about prices")["chat_id"]
    expect(page.locator(f'.chat-row[data-chat-id="{other_id}"]')).to_be_visible(timeout=WAIT)
    page.wait_for_function("window.__tones === 1", timeout=WAIT)
    assert notices(page) == [] and page.title() == "Anna · Operator console"

    # When alerts are turned off, a hidden page only counts
    page.get_by_role("button", name="Alerts on").click()
    expect(page.get_by_role("button", name="Alerts off")).to_be_visible()
    hide(page, True)
    boris.say("Hello?")
    expect(page).to_have_title("(1) Anna · Operator console", timeout=WAIT)
    assert tones(page) == 1 and notices(page) == []

    # And the list, read again live, marks both chats awaiting a reply and keeps the open one marked
    expect(page.locator(f'.chat-row[data-chat-id="{other_id}"]')).to_contain_text("Hello?", timeout=WAIT)
    for chat in (chat_id, other_id):
        expect(page.locator(f'.chat-row.awaiting-reply[data-chat-id="{chat}"] .badge-wait')).to_contain_text("waiting")
    expect(page.locator(f'.chat-row[data-chat-id="{chat_id}"] a')).to_have_attribute("aria-current", "page")
    shot(page, "list")
