"""The owner's Automation page in Chromium: a rule made with the keyboard alone from rows of
conditions and actions (no JSON), switched off from the list, its runs page; every page clean under
axe-core at desktop and phone widths, and the screenshot for the owner's guide taken on the way."""

from __future__ import annotations

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import expect

from tests.browser.owner_pages import WAIT, sign_in_owner, start_owner_server
from tests.live import ROOT

pytestmark = pytest.mark.browser

SCREENSHOT = ROOT / "docs" / "img" / "owners" / "automation.png"
PHONE = ROOT / "var" / "screenshots"
LIST = "/console/settings/automation/"


@pytest.fixture(scope="module")
def owner_server(live_template, tmp_path_factory):
    with start_owner_server(live_template, tmp_path_factory) as server:
        yield server


def axe_clean(page) -> None:
    results = Axe().run(page)
    assert results.violations_count == 0, results.generate_report()


def press(page, *keys: str) -> None:
    for key in keys:
        page.keyboard.press(key)


def test_the_owner_makes_a_rule_with_the_keyboard(browser, owner_server):
    context = browser.new_context(viewport={"width": 1280, "height": 900}, locale="en-US")
    try:
        page = context.new_page()
        sign_in_owner(page, owner_server)
        page.goto(owner_server.url(LIST))
        expect(page.get_by_role("heading", name="Automation", level=1)).to_be_visible(timeout=WAIT)
        axe_clean(page)

        page.get_by_role("link", name="New rule").focus()
        press(page, "Enter")
        expect(page.get_by_role("heading", name="New rule", level=1)).to_be_visible(timeout=WAIT)
        page.get_by_label("Name").focus()
        page.keyboard.type("Telegram refunds")
        press(page, "Tab", "ArrowDown")  # When: A visitor writes
        expect(page.get_by_label("When")).to_have_value("message.created")
        press(page, "Tab")
        expect(page.get_by_label("On", exact=True)).to_be_focused()

        # condition 1: Channel equals telegram; the attribute key stays hidden for this field
        first = page.get_by_role("group", name="Condition 1")
        press(page, "Tab", "ArrowDown")
        expect(first.get_by_label("Field")).to_have_value("channel")
        expect(first.get_by_label("Attribute key")).to_be_hidden()
        press(page, "Tab")
        expect(first.get_by_label("Operator")).to_be_focused()
        press(page, "Tab")
        page.keyboard.type("telegram")

        # condition 2: Message text matches (?i)refund
        second = page.get_by_role("group", name="Condition 2")
        press(page, "Tab", *["ArrowDown"] * 5)
        expect(second.get_by_label("Field")).to_have_value("message.text")
        press(page, "Tab", *["ArrowDown"] * 5)
        expect(second.get_by_label("Operator")).to_have_value("matches")
        press(page, "Tab")
        page.keyboard.type("(?i)refund")

        # action 1: a private note, action 2: a message to the visitor
        press(page, "Tab")
        action = page.get_by_role("group", name="Action 1")
        expect(action.get_by_label("Action", exact=True)).to_be_focused()
        press(page, "ArrowDown", "ArrowDown")
        expect(action.get_by_label("Text")).to_be_visible()
        expect(action.get_by_label("Webhook address")).to_be_hidden()
        press(page, "Tab")
        page.keyboard.type("Refund asked on Telegram: check the order.")
        press(page, "Tab", "ArrowDown")
        reply = page.get_by_role("group", name="Action 2")
        expect(reply.get_by_label("Action", exact=True)).to_have_value("send_message")
        press(page, "Tab")
        page.keyboard.type("Thank you, {{contact.name|there}}: our billing team will answer about your refund.")
        axe_clean(page)
        # the next rows' selects, then the form's first button saves
        for _ in range(6):
            if page.evaluate("document.activeElement.textContent.trim()") == "Add the rule":
                break
            press(page, "Tab")
        expect(page.get_by_role("button", name="Add the rule")).to_be_focused()
        press(page, "Enter")

        expect(page.locator(".flash")).to_contain_text("Rule “Telegram refunds” added.", timeout=WAIT)
        row = page.locator("#rules tbody tr", has_text="Telegram refunds")
        expect(row).to_contain_text("A visitor writes")
        switch = row.get_by_role("switch")
        expect(switch).to_have_attribute("aria-checked", "true")
        axe_clean(page)

        # the rule as the owner sees it again: the screenshot for the guide
        row.get_by_role("link", name="Edit").click()
        expect(page.get_by_label("Name")).to_have_value("Telegram refunds", timeout=WAIT)
        expect(page.get_by_role("group", name="Condition 2").get_by_label("Value")).to_have_value("(?i)refund")
        SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOT), full_page=True)

        # off from the list with the keyboard, then its (empty) runs
        page.goto(owner_server.url(LIST))
        switch = page.locator("#rules tbody tr", has_text="Telegram refunds").get_by_role("switch")
        switch.focus()
        press(page, "Enter")
        expect(page.locator(".flash")).to_contain_text("Rule “Telegram refunds” is off.", timeout=WAIT)
        expect(page.locator("#rules tbody tr", has_text="Telegram refunds").get_by_role("switch")).to_have_attribute(
            "aria-checked", "false"
        )
        page.locator("#rules tbody tr", has_text="Telegram refunds").get_by_role("link", name="Last runs").click()
        expect(page.get_by_text("The rule has not run yet.")).to_be_visible(timeout=WAIT)
        axe_clean(page)
    finally:
        context.close()


def test_the_automation_pages_are_clean_under_axe_on_a_phone(browser, owner_server):
    context = browser.new_context(viewport={"width": 390, "height": 844}, locale="en-US")
    try:
        page = context.new_page()
        sign_in_owner(page, owner_server)
        PHONE.mkdir(parents=True, exist_ok=True)
        for path, heading, shot in (
            (f"{LIST}new/", "New rule", "automation-phone.png"),
            (LIST, "Automation", "automation-list-phone.png"),
        ):
            page.goto(owner_server.url(path))
            expect(page.get_by_role("heading", name=heading, level=1)).to_be_visible(timeout=WAIT)
            axe_clean(page)
            page.screenshot(path=str(PHONE / shot), full_page=True)
    finally:
        context.close()
