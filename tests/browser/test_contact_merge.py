"""Contact merge in Chromium: from a chat's context panel an operator finds the visitor's other
contact, chooses it and confirms, with the keyboard alone; the panel then shows the contact that
remains, the visitor's next message lands in the chat with the latest message, and the panel is clean
under axe-core at desktop and phone widths (the guide's screenshot)."""

from __future__ import annotations

import pytest
import requests
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import expect

from tests.browser.console_pages import WAIT, sign_in, start_console_server
from tests.browser.test_console import Visitor
from tests.live import ROOT

pytestmark = pytest.mark.browser

DOCS_IMG = ROOT / "docs" / "img" / "owners"


@pytest.fixture(scope="module")
def merge_server(live_template, tmp_path_factory):
    with start_console_server(live_template, tmp_path_factory) as server:
        yield server


def axe_clean(page) -> None:
    results = Axe().run(page, context="#context")
    assert results.violations_count == 0, results.generate_report()


def start_visitor(server, *, name: str, email: str) -> Visitor:
    visitor = Visitor.__new__(Visitor)
    visitor.server = server
    visitor.guid = server.seed["button_guid"]
    visitor.token = server.visitor_session(name=name, email=email)
    visitor.http = requests.Session()
    visitor.http.trust_env = False
    visitor.http.headers["Authorization"] = f"Visitor {visitor.token}"
    return visitor


def test_an_operator_merges_two_contacts_with_the_keyboard(browser, merge_server, shot):
    # Given the same person twice: once from a laptop (e-mail known), once from a phone
    laptop = start_visitor(merge_server, name="Mira Laptop", email="mira@mail.example")
    laptop.say("Hi, I ordered a lamp yesterday")
    phone = Visitor(merge_server, name="Mira Phone")
    chat_id = phone.say("It is Mira again, from my phone")["chat_id"]

    context = browser.new_context(viewport={"width": 1280, "height": 900}, locale="en-US")
    try:
        page = context.new_page()
        sign_in(page, merge_server)
        page.goto(merge_server.url(f"/console/chats/{chat_id}/"))
        panel = page.locator("#context")
        expect(panel.get_by_role("heading", name="Merge with…")).to_be_visible(timeout=WAIT)

        # When the operator searches with the keyboard
        search = page.get_by_label("Find the other contact")
        search.focus()
        page.keyboard.type("mira@")
        page.keyboard.press("Enter")
        choices = page.get_by_role("group", name="Merge this contact into")
        expect(choices.get_by_role("radio")).to_have_count(1, timeout=WAIT)
        expect(choices).to_contain_text("Mira Laptop (mira@mail.example)")
        axe_clean(page)

        # And tabs to the found contact, then to Continue
        page.keyboard.press("Tab")  # the Search button
        page.keyboard.press("Tab")  # the radio group
        expect(choices.get_by_role("radio").first).to_be_focused()
        page.keyboard.press("Tab")
        expect(page.get_by_role("button", name="Continue")).to_be_focused()
        page.keyboard.press("Enter")

        # Then a confirmation names both contacts, with Cancel focused
        confirmation = page.locator("#merge-confirm-text")
        expect(confirmation).to_contain_text("Merge Mira Phone into Mira Laptop (mira@mail.example)?", timeout=WAIT)
        expect(page.get_by_role("link", name="Cancel")).to_be_focused()
        axe_clean(page)
        DOCS_IMG.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(DOCS_IMG / "merge.png"), full_page=True)
        shot(page, "confirm")

        # When the operator goes back to Merge and presses Enter
        page.keyboard.press("Shift+Tab")
        expect(page.get_by_role("button", name="Merge")).to_be_focused()
        page.keyboard.press("Enter")

        # Then the panel shows the contact that remains, its name and e-mail
        expect(panel.get_by_role("status")).to_contain_text("Merged into Mira Laptop.", timeout=WAIT)
        expect(panel.get_by_label("Name")).to_have_value("Mira Laptop")
        expect(panel.get_by_label("E-mail")).to_have_value("mira@mail.example")
        expect(panel.locator("#context-earlier ~ .context-list")).to_contain_text("I ordered a lamp")
        axe_clean(page)

        # And at phone width the panel is still clean
        page.set_viewport_size({"width": 390, "height": 844})
        page.goto(merge_server.url(f"/console/chats/{chat_id}/#details"))  # the phone's details pane
        expect(panel.get_by_role("heading", name="Merge with…")).to_be_visible(timeout=WAIT)
        axe_clean(page)
        shot(page, "phone")
    finally:
        context.close()

    # And the phone's session writes on into the chat with the latest message
    assert phone.say("Any news about the lamp?")["chat_id"] == chat_id
    assert laptop.say("And from the laptop")["chat_id"] == chat_id
