"""The owner's pre-chat form page in Chromium: the owner builds a form with the keyboard (when, a
required name, a select with options, a consent), a refusal shows beside its field, the saved form
is what the API reads; clean under axe-core at desktop and phone widths. The desktop view is the
guide's screenshot (docs/img/owners/prechat.png)."""

from __future__ import annotations

from pathlib import Path

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import expect

from tests.browser.conftest import api_client
from tests.browser.owner_pages import WAIT, sign_in_owner, start_owner_server

pytestmark = pytest.mark.browser

IMAGE = Path(__file__).resolve().parents[2] / "docs" / "img" / "owners" / "prechat.png"
PAGE = "/console/settings/widget/prechat/"


@pytest.fixture(scope="module")
def owner_server(live_template, tmp_path_factory):
    with start_owner_server(live_template, tmp_path_factory) as server:
        yield server


def assert_axe_clean(page) -> None:
    results = Axe().run(page)
    assert results.violations_count == 0, results.generate_report()


def test_the_owner_builds_the_form_and_a_refusal_shows_beside_its_field(browser, owner_server, shot):
    context = browser.new_context(viewport={"width": 1280, "height": 900}, locale="en-US")
    try:
        page = context.new_page()
        sign_in_owner(page, owner_server)
        page.goto(owner_server.url(PAGE))
        expect(page.get_by_role("heading", name="Pre-chat form", level=1)).to_be_visible(timeout=WAIT)
        assert_axe_clean(page)

        # A key the API refuses: the page says why beside it, in the API's words
        first = page.locator("#field-0")
        page.get_by_label("Show the form").select_option("always")
        first.get_by_label("Key", exact=True).fill("Your Name")
        first.get_by_label("English", exact=True).fill("Your name")
        page.get_by_role("button", name="Save the pre-chat form").click()
        key = first.get_by_label("Key", exact=True)
        expect(key).to_have_attribute("aria-invalid", "true")
        expect(key).to_have_accessible_description(
            "1 to 40 characters: lowercase Latin letters, digits and underscores."
        )

        # Fixed with the keyboard, then two more fields, one save each (each save adds an empty field)
        key.focus()
        page.keyboard.press("Control+A")
        page.keyboard.type("name")
        first.get_by_label("Required (for a checkbox: a consent the visitor must give)").check()
        first.get_by_label("العربية", exact=True).fill("اسمك")
        first.get_by_label("العربية", exact=True).focus()
        page.keyboard.press("Enter")
        expect(page.get_by_text("Saved.")).to_be_visible(timeout=WAIT)

        second = page.locator("#field-1")
        second.get_by_label("Key", exact=True).fill("plan")
        second.get_by_label("Type", exact=True).select_option("select")
        second.get_by_label("English", exact=True).fill("Plan")
        second.get_by_text("Options (for a choice from a list)").click()
        second.get_by_label("Values, one per line").fill("free\npro")
        second.get_by_label("Their labels in English, one per line").fill("Free\nPro")
        page.get_by_role("button", name="Save the pre-chat form").click()
        expect(page.get_by_text("Saved.")).to_be_visible(timeout=WAIT)

        third = page.locator("#field-2")
        third.get_by_label("Key", exact=True).fill("consent")
        third.get_by_label("Type", exact=True).select_option("checkbox")
        third.get_by_label("English", exact=True).fill("I accept the [privacy policy]")
        third.get_by_label("Required (for a checkbox: a consent the visitor must give)").check()
        page.get_by_role("button", name="Save the pre-chat form").click()
        expect(page.get_by_text("Saved.")).to_be_visible(timeout=WAIT)

        form = api_client(owner_server)("GET", "/api/v1/widget/settings").json()["data"]["prechat"]
        assert form["when"] == "always"
        assert [f["key"] for f in form["fields"]] == ["name", "plan", "consent"]
        assert form["fields"][0]["label_i18n"] == {"en": "Your name", "ar": "اسمك"}
        assert form["fields"][1]["options"][1] == {"value": "pro", "label_i18n": {"en": "Pro"}}
        assert_axe_clean(page)
        page.evaluate("window.scrollTo(0, 0)")
        page.screenshot(path=str(IMAGE))
        shot(page, "desktop")
    finally:
        context.close()

    phone = browser.new_context(viewport={"width": 390, "height": 844}, locale="en-US")
    try:
        page = phone.new_page()
        sign_in_owner(page, owner_server)
        page.goto(owner_server.url(PAGE))
        expect(page.get_by_role("heading", name="Pre-chat form", level=1)).to_be_visible(timeout=WAIT)
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 390, width
        assert_axe_clean(page)
        shot(page, "phone")
    finally:
        phone.close()
