"""Labels in Chromium: an operator sets a chat's labels from its details with the keyboard alone
(the chips follow in the details and the list), the list filtered by a label keeps the chats that
carry it (a shareable URL), the owner adds a label on the Labels page; the chat view and the Labels
page are clean under axe at 1280 and 390 px."""

from __future__ import annotations

import re
import uuid

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import expect

from tests.browser.conftest import api_client
from tests.browser.owner_pages import WAIT, sign_in_owner, start_owner_server
from tests.browser.test_console import Visitor
from tests.live import ROOT

pytestmark = pytest.mark.browser

SCREENSHOT = ROOT / "docs" / "img" / "owners" / "labels.png"
SHOTS = ROOT / "var" / "screenshots"


def post(api, path: str, body: dict) -> dict:
    response = api("POST", path, json=body, headers={"X-Service-Idempotency-Key": uuid.uuid4().hex})
    assert response.status_code in (200, 201), response.text
    return response.json()


@pytest.fixture(scope="module")
def label_server(live_template, tmp_path_factory):
    with start_owner_server(live_template, tmp_path_factory) as server:
        api = api_client(server)
        post(api, "/api/v1/labels", {"name": "Refund", "color": "#b3261e"})
        post(api, "/api/v1/labels", {"name": "VIP", "color": "#1f6feb"})
        post(api, "/api/v1/labels", {"name": "Bug"})
        yield server


def axe_clean(page) -> None:
    results = Axe().run(page)
    assert results.violations_count == 0, results.generate_report()


def open_chat(page, server, chat_id: int) -> None:
    page.goto(server.url(f"/console/chats/{chat_id}/"))
    expect(page.locator("#connection")).to_have_attribute("data-state", "open", timeout=WAIT)


def test_labels_set_from_the_chat_with_the_keyboard_and_the_list_filtered(browser, label_server):
    refund_chat = Visitor(label_server, name="Anna").say("I want my money back")["chat_id"]
    Visitor(label_server, name="Boris").say("Where is my order?")
    context = browser.new_context(viewport={"width": 1280, "height": 900}, locale="en-US")
    try:
        page = context.new_page()
        sign_in_owner(page, label_server)
        open_chat(page, label_server, refund_chat)
        details = page.locator("#chat-labels")
        expect(details).to_contain_text("No labels.")

        # When the operator opens "Edit labels" and ticks Refund and VIP with the keyboard alone
        page.get_by_text("Edit labels").focus()
        page.keyboard.press("Enter")
        refund = page.get_by_role("checkbox", name="Refund")
        refund.focus()
        page.keyboard.press("Space")
        page.keyboard.press("Tab")  # the next label in the list: VIP (labels go by name)
        expect(page.get_by_role("checkbox", name="VIP")).to_be_focused()
        page.keyboard.press("Space")
        page.get_by_role("button", name="Save labels").focus()
        page.keyboard.press("Enter")

        # Then the chat's details and its row in the list show both chips
        expect(details.locator(".label-chip")).to_have_count(2, timeout=WAIT)
        expect(details).to_contain_text("Refund")
        row = page.locator(f'.chat-row[data-chat-id="{refund_chat}"]')
        expect(row.locator(".label-chip")).to_have_count(2, timeout=WAIT)
        labels = api_client(label_server)("GET", f"/api/v1/chats/{refund_chat}/labels").json()
        assert labels == {"labels": ["Refund", "VIP"]}

        # And the list filtered by Refund keeps that chat only, at a URL a colleague can open
        page.goto(label_server.url("/console/"))
        page.get_by_label("Label").select_option("Refund")
        expect(page).to_have_url(re.compile(r"[?&]label=Refund"), timeout=WAIT)
        rows = page.locator("#chat-list .chat-row")
        expect(rows).to_have_count(1, timeout=WAIT)
        expect(rows.first).to_contain_text("Anna")
        page.goto(label_server.url("/console/?label=Refund"))
        expect(page.locator("#chat-list .chat-row")).to_have_count(1, timeout=WAIT)
        expect(page.get_by_label("Label")).to_have_value("Refund")
    finally:
        context.close()


def test_the_owner_adds_a_label(browser, label_server):
    context = browser.new_context(viewport={"width": 1280, "height": 900}, locale="en-US")
    try:
        page = context.new_page()
        sign_in_owner(page, label_server)
        page.goto(label_server.url("/console/settings/labels/"))
        page.get_by_label("Name", exact=True).fill("Feedback")
        page.get_by_label("Colour", exact=True).fill("#2a7ae2")
        page.get_by_role("button", name="Add the label").click()
        expect(page.get_by_text("Label “Feedback” created.")).to_be_visible(timeout=WAIT)
        expect(page.locator("#labels")).to_contain_text("Feedback")
        page.get_by_role("button", name="Add the label").click()  # an empty name: the API's words
        expect(page.locator(".field-invalid")).to_contain_text("This field may not be blank.")
    finally:
        context.close()


@pytest.mark.parametrize("width", [1280, 390])
def test_the_chat_view_and_the_labels_page_are_clean_under_axe(browser, label_server, width):
    chat_id = Visitor(label_server, name="Clara").say("Hi")["chat_id"]
    api = api_client(label_server)
    response = api(
        "PUT",
        f"/api/v1/chats/{chat_id}/labels",
        json={"labels": ["Bug", "VIP"]},
        headers={"X-Service-Idempotency-Key": uuid.uuid4().hex},
    )
    assert response.status_code == 200, response.text
    context = browser.new_context(viewport={"width": width, "height": 900}, locale="en-US")
    try:
        page = context.new_page()
        sign_in_owner(page, label_server)
        open_chat(page, label_server, chat_id)
        if width < 600:  # on a phone the details are a page of their own, behind "Details"
            page.get_by_role("link", name="Details").click()
        page.get_by_text("Edit labels").click()
        expect(page.get_by_role("checkbox", name="Bug")).to_be_checked()
        axe_clean(page)
        page.screenshot(path=str(SHOTS / f"labels-chat-{width}.png"), full_page=False)

        page.goto(label_server.url("/console/settings/labels/"))
        expect(page.get_by_role("heading", name="Labels", level=1)).to_be_visible(timeout=WAIT)
        axe_clean(page)
        if width == 1280:
            SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SCREENSHOT), full_page=True)
        else:
            page.screenshot(path=str(SHOTS / "labels-phone.png"), full_page=True)
    finally:
        context.close()
