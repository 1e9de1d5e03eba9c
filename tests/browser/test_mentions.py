"""Mentions in Chromium: operator Olga writes a private note naming Pavel through the note box's `@`
picker (keyboard alone), and Pavel's open console, in a browser context of its own, shows the
toast, the browser notification (Alerts on, page hidden) and the count on its "Mentions" item; the
Mentions page lists it and opening it shows the chat at the note. Clean under axe at 1280 and 390 px.

Headless Chromium has no desktop for notifications and no window to hide: an init script records
what Pavel's page asks of `Notification` (permission granted) and makes `document.hidden` follow
`window.__hidden` (as tests/browser/test_console_alerts.py does)."""

from __future__ import annotations

import re

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import expect

from tests.browser.console_pages import (
    COLLEAGUE_EMAIL,
    COLLEAGUE_PASSWORD,
    WAIT,
    connected,
    sign_in,
    start_console_server,
)
from tests.browser.test_console import Visitor
from tests.browser.test_console_alerts import BROWSER, hide, notices
from tests.live import ROOT

pytestmark = pytest.mark.browser

GUIDE_SHOT = ROOT / "docs" / "img" / "owners" / "mentions.png"


@pytest.fixture(scope="module")
def console_server(live_template, tmp_path_factory):
    with start_console_server(live_template, tmp_path_factory) as server:
        yield server


def clean_under_axe(page) -> None:
    for width in (1280, 390):
        page.set_viewport_size({"width": width, "height": 800})
        results = Axe().run(page)
        assert results.violations_count == 0, (width, results.generate_report())
    page.set_viewport_size({"width": 1280, "height": 800})


def note_box(page, server, chat_id: int):
    page.goto(server.url(f"/console/chats/{chat_id}/"))
    connected(page)
    page.get_by_role("tab", name="Private note").click()
    field = page.get_by_role("textbox", name="Note")
    expect(field).to_be_focused()
    return field


def test_a_mention_reaches_the_other_operators_open_console(page, browser, console_server, shot):
    # Given Pavel's console open in a browser context of its own, Alerts on, the page hidden
    pavel_context = browser.new_context(viewport={"width": 1280, "height": 800}, locale="en-US")
    try:
        pavel = pavel_context.new_page()
        pavel.add_init_script(BROWSER)
        sign_in(pavel, console_server, email=COLLEAGUE_EMAIL, password=COLLEAGUE_PASSWORD)
        pavel.get_by_role("button", name="Alerts off").click()
        expect(pavel.locator("#mentions-count")).to_be_hidden()
        hide(pavel, True)

        # And Olga in a visitor's chat, in the note box
        chat_id = Visitor(console_server, name="Anna").say("My parcel never came")["chat_id"]
        sign_in(page, console_server)
        field = note_box(page, console_server, chat_id)
        listbox = page.get_by_role("listbox", name="Operators to mention")

        # When she types `@pa`, the picker lists Pavel (never herself), the first option active
        page.keyboard.type("Ask @pa")
        options = listbox.get_by_role("option")
        expect(options).to_have_count(1, timeout=WAIT)
        expect(options.nth(0)).to_have_text("Pavel")
        expect(field).to_have_attribute("aria-activedescendant", options.nth(0).get_attribute("id"))
        shot(page, "picker")

        # And Escape closes it, keeping the text; typing opens it again and Enter inserts `@Pavel `
        page.keyboard.press("Escape")
        expect(listbox).to_be_hidden()
        expect(field).to_have_value("Ask @pa")
        page.keyboard.type("v")
        expect(options).to_have_count(1, timeout=WAIT)
        page.keyboard.press("Enter")
        expect(field).to_have_value("Ask @Pavel ")
        expect(listbox).to_be_hidden()

        # And Enter then adds the note
        page.keyboard.type("to call her, please")
        page.keyboard.press("Enter")
        expect(page.locator("#messages")).to_contain_text("Ask @Pavel to call her, please", timeout=WAIT)

        # Then Pavel's console shows the toast, the count and the browser notification
        toast = pavel.locator("#toasts .toast")
        expect(toast).to_contain_text("Olga mentioned you", timeout=WAIT)
        expect(toast).to_contain_text("Ask @Pavel to call her, please")
        expect(pavel.locator("#mentions-count")).to_be_visible()
        expect(pavel.locator("#mentions-count .mentions-n")).to_have_text("1")
        mentions = [n for n in notices(pavel) if n["tag"].startswith("mention-")]  # besides the visitor's
        assert [(n["title"], n["body"]) for n in mentions] == [("Olga mentioned you", "Ask @Pavel to call her, please")]
        # Olga's own console heard nothing of it
        expect(page.locator("#toasts .toast")).to_have_count(0)
        hide(pavel, False)
        clean_under_axe(pavel)

        # When Pavel opens the Mentions page, it lists the mention, unread
        pavel.get_by_role("link", name=re.compile(r"^Mentions")).click()
        expect(pavel.get_by_role("heading", name="Mentions", level=1)).to_be_visible(timeout=WAIT)
        row = pavel.locator(".mention-row.mention-unread")
        expect(row).to_contain_text("Olga")
        expect(row).to_contain_text("Ask @Pavel to call her, please")
        clean_under_axe(pavel)
        GUIDE_SHOT.parent.mkdir(parents=True, exist_ok=True)
        pavel.screenshot(path=str(GUIDE_SHOT))
        pavel.set_viewport_size({"width": 390, "height": 800})
        shot(pavel, "phone")
        pavel.set_viewport_size({"width": 1280, "height": 800})

        # And opening it shows the chat at the note, and the count is gone
        row.get_by_role("button").click()
        expect(pavel).to_have_url(re.compile(rf"/console/chats/{chat_id}/#m-\d+$"), timeout=WAIT)
        expect(pavel.locator("#messages")).to_contain_text("Ask @Pavel to call her, please")
        expect(pavel.locator("#mentions-count")).to_be_hidden()
    finally:
        pavel_context.close()


def test_the_picker_and_the_mentions_page_right_to_left(page, console_server, shot):
    # Given Olga's console in Arabic, in a visitor's chat's note box
    from tests.browser.test_console_languages import switch_language

    chat_id = Visitor(console_server, name="Boris").say("Hello")["chat_id"]
    sign_in(page, console_server)
    switch_language(page, "العربية")
    expect(page.locator("html")).to_have_attribute("dir", "rtl")
    page.goto(console_server.url(f"/console/chats/{chat_id}/"))
    connected(page)
    page.locator("#tab-note").click()
    field = page.locator("#note_body")
    expect(field).to_be_focused()

    # When she types `@` in Arabic text, the list opens under the box, aligned to the right edge
    page.keyboard.type("اسأل @")
    listbox = page.locator("#mention-list")
    expect(listbox.get_by_role("option").first).to_be_visible(timeout=WAIT)
    box, items = field.bounding_box(), listbox.bounding_box()
    assert abs((box["x"] + box["width"]) - (items["x"] + items["width"])) < 2
    shot(page, "picker-rtl")
    page.keyboard.type("Pav")
    page.keyboard.press("Tab")
    expect(field).to_have_value("اسأل @Pavel ")
    results = Axe().run(page)
    assert results.violations_count == 0, results.generate_report()

    # And the Mentions page reads right to left, clean under axe
    page.goto(console_server.url("/console/mentions/"))
    expect(page.get_by_role("heading", name="الإشارات", level=1)).to_be_visible()
    clean_under_axe(page)
