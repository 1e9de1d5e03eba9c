"""Macros in Chromium: the operator runs a macro from the picker beside the composer with the
keyboard alone (the button opens the listbox, arrows move, Enter runs; the transcript follows through
the console socket); a refusal is shown in the API's words; the owner edits a macro's actions as rows;
the chat view with the picker open and the Macros pages are clean under axe at 1280 and 390 px."""

from __future__ import annotations

import uuid

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import expect

from tests.browser.conftest import api_client
from tests.browser.owner_pages import WAIT, sign_in_owner, start_owner_server
from tests.browser.test_console import Visitor
from tests.live import ROOT

pytestmark = pytest.mark.browser

SCREENSHOT = ROOT / "docs" / "img" / "owners" / "macros.png"
SHOTS = ROOT / "var" / "screenshots"


def post(api, path: str, body: dict) -> dict:
    response = api("POST", path, json=body, headers={"X-Service-Idempotency-Key": uuid.uuid4().hex})
    assert response.status_code in (200, 201), response.text
    return response.json()


@pytest.fixture(scope="module")
def macro_server(live_template, tmp_path_factory):
    with start_owner_server(live_template, tmp_path_factory) as server:
        api = api_client(server)
        post(api, "/api/v1/labels", {"name": "Refund", "color": "#b3261e"})
        post(api, "/api/v1/macros", {"name": "Greeting", "actions": [{"type": "send_message", "text": "Hello!"}]})
        post(
            api,
            "/api/v1/macros",
            {
                "name": "Refund request",
                "actions": [
                    {"type": "send_message", "text": "Hi {{contact.name|there}}, we are looking at your refund."},
                    {"type": "add_note", "text": "Refund asked: check the order."},
                    {"type": "add_labels", "labels": ["Refund"]},
                ],
            },
        )
        yield server


def axe_clean(page) -> None:
    results = Axe().run(page)
    assert results.violations_count == 0, results.generate_report()


def open_chat(page, server, chat_id: int) -> None:
    page.goto(server.url(f"/console/chats/{chat_id}/"))
    expect(page.locator("#connection")).to_have_attribute("data-state", "open", timeout=WAIT)


def test_a_macro_runs_from_the_picker_with_the_keyboard(browser, macro_server):
    chat_id = Visitor(macro_server, name="Anna").say("I want my money back")["chat_id"]
    context = browser.new_context(viewport={"width": 1280, "height": 900}, locale="en-US")
    try:
        page = context.new_page()
        sign_in_owner(page, macro_server)
        open_chat(page, macro_server, chat_id)
        button = page.get_by_role("button", name="Macros")
        listbox = page.get_by_role("listbox", name="Macros")
        expect(page.locator("#macro-select")).to_be_hidden()  # the script took over the plain form

        # When the operator focuses the button and opens the list with Enter
        button.focus()
        page.keyboard.press("Enter")
        expect(listbox).to_be_visible()
        expect(listbox).to_be_focused()
        expect(button).to_have_attribute("aria-expanded", "true")
        options = listbox.get_by_role("option")
        expect(options.nth(0)).to_have_attribute("aria-selected", "true")
        page.keyboard.press("ArrowDown")
        expect(options.nth(1)).to_have_attribute("aria-selected", "true")
        expect(listbox).to_have_attribute("aria-activedescendant", options.nth(1).get_attribute("id"))
        page.screenshot(path=str(SHOTS / "macros-picker.png"), full_page=False)

        # And runs "Refund request" with Enter
        page.keyboard.press("Enter")

        # Then the message and the note arrive in the transcript, the label on the chat
        messages = page.locator("#messages")
        expect(messages).to_contain_text("Hi Anna, we are looking at your refund.", timeout=WAIT)
        expect(messages).to_contain_text("Refund asked: check the order.", timeout=WAIT)
        expect(page.get_by_role("status").filter(has_text="Refund request")).to_be_visible()
        labels = api_client(macro_server)("GET", f"/api/v1/chats/{chat_id}/labels").json()
        assert labels == {"labels": ["Refund"]}
    finally:
        context.close()


def test_a_refusal_is_shown_in_the_apis_words(browser, macro_server):
    api = api_client(macro_server)
    chat_id = Visitor(macro_server, name="Boris").say("spam spam")["chat_id"]
    post(api, f"/api/v1/chats/{chat_id}/state", {"state": "spam"})
    context = browser.new_context(viewport={"width": 1280, "height": 900}, locale="en-US")
    try:
        page = context.new_page()
        sign_in_owner(page, macro_server)
        open_chat(page, macro_server, chat_id)
        page.get_by_role("button", name="Macros").focus()
        page.keyboard.press("ArrowDown")
        page.keyboard.press("Enter")
        alert = page.locator("#composer [role=alert]")
        expect(alert).to_contain_text(
            "Action 1 (send_message) was refused: A spam chat takes no messages", timeout=WAIT
        )
        assert "Hello!" not in page.locator("#messages").inner_text()
    finally:
        context.close()


@pytest.mark.parametrize("width", [1280, 390])
def test_the_picker_and_the_macros_pages_are_clean_under_axe(browser, macro_server, width):
    chat_id = Visitor(macro_server, name="Clara").say("Hi")["chat_id"]
    context = browser.new_context(viewport={"width": width, "height": 900}, locale="en-US")
    try:
        page = context.new_page()
        sign_in_owner(page, macro_server)
        open_chat(page, macro_server, chat_id)
        page.get_by_role("button", name="Macros").click()
        expect(page.get_by_role("listbox", name="Macros")).to_be_visible()
        axe_clean(page)

        page.goto(macro_server.url("/console/settings/macros/"))
        expect(page.get_by_role("heading", name="Macros", level=1)).to_be_visible(timeout=WAIT)
        axe_clean(page)
        page.get_by_role("link", name="Edit Refund request").click()
        expect(page.get_by_role("heading", name="Edit the macro “Refund request”", level=1)).to_be_visible()
        # Each row shows the input its type needs; a spare row waits behind "Add an action"
        expect(page.locator("#actions-0-text")).to_be_visible()
        expect(page.locator("#actions-0-labels")).to_be_hidden()
        expect(page.locator("#actions-2-labels")).to_be_visible()
        expect(page.locator("#actions-4-type")).to_be_hidden()
        page.get_by_role("button", name="Add an action").click()
        expect(page.locator("#actions-3-type")).to_be_focused()
        page.keyboard.press("End")  # the last type: close
        axe_clean(page)
        if width == 1280:
            SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SCREENSHOT), full_page=True)
        else:
            page.screenshot(path=str(SHOTS / "macros-phone.png"), full_page=True)
    finally:
        context.close()
