"""The owner's proactive messages page in Chromium: creating a message with the keyboard, a refusal in
the API's words, disabling it; clean under axe-core at desktop and phone widths; the guide's
screenshot."""

from __future__ import annotations

from pathlib import Path

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import expect

from tests.browser.owner_pages import WAIT, sign_in_owner, start_owner_server

pytestmark = pytest.mark.browser

GUIDE_SHOT = Path(__file__).resolve().parents[2] / "docs" / "img" / "owners" / "proactive.png"
LIST = "/console/settings/widget/proactive/"


@pytest.fixture(scope="module")
def owner_server(live_template, tmp_path_factory):
    with start_owner_server(live_template, tmp_path_factory) as server:
        yield server


def axe_clean(page) -> None:
    results = Axe().run(page)
    assert results.violations_count == 0, results.generate_report()


def test_the_owner_creates_refused_then_saved_and_disables_a_proactive_message(browser, owner_server):
    context = browser.new_context(viewport={"width": 1280, "height": 1000}, locale="en-US")
    try:
        page = context.new_page()
        sign_in_owner(page, owner_server)
        page.goto(owner_server.url("/console/settings/widget/"))
        page.get_by_role("link", name="Proactive messages").click()
        expect(page.get_by_role("heading", name="Proactive messages", level=1)).to_be_visible(timeout=WAIT)
        axe_clean(page)

        page.get_by_role("link", name="New proactive message").click()
        page.get_by_label("Name", exact=True).fill("Pricing help")
        page.get_by_label("Text in English").fill("Questions about our plans? We answer in minutes.")
        page.get_by_label("Pages").fill("https://shop.example/pricing*")
        page.get_by_label("Seconds on the page").fill("-5")
        axe_clean(page)
        page.get_by_role("button", name="Create the message").click()
        # Refused in the API's words, beside the field, nothing written
        expect(page.locator(".field-invalid")).to_contain_text("greater than or equal to 0", timeout=WAIT)
        axe_clean(page)

        # With the keyboard: the corrected value, then Enter sends the form
        seconds = page.get_by_label("Seconds on the page")
        seconds.fill("20")
        page.get_by_label("Priority").focus()
        page.keyboard.press("Enter")
        expect(page.locator(".flash")).to_contain_text("Proactive message “Pricing help” created.", timeout=WAIT)
        row = page.locator("#proactive tbody tr", has_text="Pricing help")
        expect(row).to_contain_text("Enabled")

        page.get_by_role("link", name="New proactive message").click()
        page.get_by_label("Name", exact=True).fill("Welcome back")
        page.get_by_label("Text in English").fill("Welcome back! Anything we can help with?")
        page.get_by_label("At least this many visits").fill("2")
        page.get_by_label("How often").select_option("once_per_session")
        page.get_by_role("button", name="Create the message").click()
        expect(page.locator(".flash")).to_contain_text("created", timeout=WAIT)

        row.get_by_role("button", name="Disable").click()
        expect(page.locator(".flash")).to_contain_text("“Pricing help” is disabled.", timeout=WAIT)
        expect(page.locator("#proactive tbody tr", has_text="Pricing help")).to_contain_text("Disabled")
        axe_clean(page)
        GUIDE_SHOT.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(GUIDE_SHOT))
    finally:
        context.close()


@pytest.mark.parametrize("path", [LIST, f"{LIST}new/"])
def test_the_pages_are_clean_at_phone_width(browser, owner_server, path):
    context = browser.new_context(viewport={"width": 390, "height": 844}, locale="en-US")
    try:
        page = context.new_page()
        sign_in_owner(page, owner_server)
        page.goto(owner_server.url(path))
        expect(page.locator("main h1")).to_be_visible(timeout=WAIT)
        axe_clean(page)
        assert page.evaluate("document.documentElement.scrollWidth") <= 390  # nothing widens the page
        page.screenshot(
            path=str(Path("var/screenshots") / f"settings-proactive-390{path.count('/')}.png"), full_page=True
        )
    finally:
        context.close()
