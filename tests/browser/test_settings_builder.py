"""The widget builder in Chromium: the owner changes the main colour and the greeting, the live preview
(the real widget in a frame) shows them before anything is saved, the owner saves with the keyboard,
and the demo page's widget shows them; the page is clean under axe-core at desktop and phone widths."""

from __future__ import annotations

from pathlib import Path

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import expect

from tests.browser.owner_pages import WAIT, sign_in_owner, start_owner_server

pytestmark = pytest.mark.browser

SCREENSHOT = Path(__file__).resolve().parents[2] / "docs" / "img" / "owners" / "widget.png"
COLOUR = "#7B1FA2"
GREETING = "Welcome! Ask us about delivery times."
PRIMARY = "el => getComputedStyle(el).getPropertyValue('--primary').trim().toUpperCase()"


@pytest.fixture(scope="module")
def owner_server(live_template, tmp_path_factory):
    with start_owner_server(live_template, tmp_path_factory) as server:
        yield server


def test_the_owner_sees_changes_in_the_preview_saves_them_and_the_demo_page_shows_them(browser, owner_server):
    context = browser.new_context(viewport={"width": 1280, "height": 900}, locale="en-US")
    try:
        page = context.new_page()
        sign_in_owner(page, owner_server)
        page.goto(owner_server.url("/console/settings/widget/"))
        expect(page.get_by_role("heading", name="Widget", level=1)).to_be_visible(timeout=WAIT)
        preview = page.frame_locator("iframe[data-preview-frame]")
        expect(preview.locator("chat-widget[data-preview-applied]")).to_have_count(1, timeout=WAIT)

        # when the owner types a colour and a greeting (nothing saved yet)
        page.locator("#id_widget_color_primary").fill(COLOUR)
        page.locator("#id_widget_greeting").fill(GREETING)

        # then the preview's open chat window shows both
        expect(preview.locator(".log .msg").first).to_have_text(GREETING, timeout=WAIT)
        assert preview.locator(".cw").evaluate(PRIMARY) == COLOUR
        # and the picker beside the text box follows the text
        assert page.locator('[data-colour-for="id_widget_color_primary"]').input_value() == COLOUR.lower()
        # and nobody's visitors see it yet
        demo = context.new_page()
        demo.goto(owner_server.url("/demo/"))
        expect(demo.locator("chat-widget[data-ready]")).to_have_count(1, timeout=WAIT)
        assert demo.locator(".cw").evaluate(PRIMARY) != COLOUR

        page.evaluate("window.scrollTo(0, 0)")
        page.screenshot(path=str(SCREENSHOT))

        # when the owner saves with the keyboard
        page.get_by_role("button", name="Save").focus()
        page.keyboard.press("Enter")
        expect(page.locator(".flash")).to_contain_text("Saved.", timeout=WAIT)
        assert page.locator("#id_widget_color_primary").input_value() == COLOUR
        assert page.locator("#id_widget_greeting").input_value() == GREETING

        # then the demo page's widget shows them to a new visitor (a browser that read the config
        # before keeps it for up to a minute: the config is served with max-age=60)
        visitor = browser.new_context(viewport={"width": 1280, "height": 900}, locale="en-US")
        demo = visitor.new_page()
        demo.goto(owner_server.url("/demo/"))
        expect(demo.locator("chat-widget[data-ready]")).to_have_count(1, timeout=WAIT)
        assert demo.locator(".cw").evaluate(PRIMARY) == COLOUR
        # the greeting bubble beside the launcher (nobody is online there: the window holds the offline form)
        expect(demo.locator("chat-widget .bubble")).to_have_text(GREETING, timeout=WAIT)
        visitor.close()
    finally:
        context.close()


def test_the_preview_follows_the_online_switch_and_sends_nothing(browser, owner_server):
    context = browser.new_context(viewport={"width": 1280, "height": 900}, locale="en-US")
    try:
        page = context.new_page()
        sign_in_owner(page, owner_server)
        page.goto(owner_server.url("/console/settings/widget/"))
        preview = page.frame_locator("iframe[data-preview-frame]")
        expect(preview.locator("chat-widget[data-preview-applied]")).to_have_count(1, timeout=WAIT)
        # a message typed into the preview is not sent: no session is made
        preview.locator("chat-widget textarea").fill("Is this sent?")
        preview.locator("chat-widget textarea").press("Enter")
        expect(preview.locator("chat-widget .note[role=alert]")).to_contain_text("preview", timeout=WAIT)
        tokens = preview.locator("chat-widget").evaluate(
            "() => Object.keys(localStorage).filter(k => k.startsWith('chatwidget:') && "
            "(JSON.parse(localStorage.getItem(k)).token || ''))"
        )
        assert tokens == []
        # nobody online: the offline form takes the chat's place
        page.locator("#preview-online").select_option("0")
        expect(preview.locator("chat-widget .win form")).to_be_visible(timeout=WAIT)
        expect(preview.locator("chat-widget .win textarea[name=message]")).to_be_visible(timeout=WAIT)
    finally:
        context.close()


@pytest.mark.parametrize("width", [1280, 390])
def test_the_builder_is_clean_under_axe(browser, owner_server, width):
    context = browser.new_context(viewport={"width": width, "height": 800}, locale="en-US")
    try:
        page = context.new_page()
        sign_in_owner(page, owner_server)
        page.goto(owner_server.url("/console/settings/widget/"))
        preview = page.frame_locator("iframe[data-preview-frame]")
        expect(preview.locator("chat-widget[data-preview-applied]")).to_have_count(1, timeout=WAIT)
        results = Axe().run(page)
        assert results.violations_count == 0, results.generate_report()
        if width == 390:
            page.screenshot(path="/tmp/builder-phone.png")
    finally:
        context.close()
