"""The owner's Data area in Chromium: a visitor writes through the live server's visitor API; the
owner finds the contact by searching, corrects its details, tags it, erases it after the
confirmation (it leaves the list), and reads the audit log's entry. The pages are clean under
axe-core at desktop and phone widths and usable with the keyboard; the desktop view is the guide's
screenshot (docs/img/owners/data.png)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import requests
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import expect

from tests.browser.owner_pages import WAIT, sign_in_owner, start_owner_server

pytestmark = pytest.mark.browser

IMAGE = Path(__file__).resolve().parents[2] / "docs" / "img" / "owners" / "data.png"


@pytest.fixture(scope="module")
def owner_server(live_template, tmp_path_factory):
    with start_owner_server(live_template, tmp_path_factory) as server:
        yield server


def visitor_writes(server, *, name: str, body: str) -> None:
    token = server.visitor_session(name=name)
    response = requests.post(
        server.url(f"/api/visitor/v1/{server.seed['button_guid']}/messages"),
        json={"type": "text", "body": body},
        headers={"Authorization": f"Visitor {token}"},
        timeout=10,
    )
    assert response.status_code == 201, response.text


def assert_axe_clean(page) -> None:
    results = Axe().run(page)
    assert results.violations_count == 0, results.generate_report()


def test_the_owner_finds_edits_tags_and_erases_a_contact(browser, owner_server, shot):
    visitor_writes(owner_server, name="Marta Keller", body="Please delete my data")
    visitor_writes(owner_server, name="Ivan Petrov", body="Hello")
    context = browser.new_context(viewport={"width": 1280, "height": 900}, locale="en-US")
    try:
        page = context.new_page()
        sign_in_owner(page, owner_server)
        page.goto(owner_server.url("/console/settings/data/"))
        expect(page.get_by_role("heading", name="Contacts", level=1)).to_be_visible(timeout=WAIT)
        # find her with the keyboard: the search box, Enter
        search = page.get_by_label("Search contacts")
        search.focus()
        page.keyboard.type("marta")
        page.keyboard.press("Enter")
        expect(page.get_by_role("link", name="Marta Keller")).to_be_visible(timeout=WAIT)
        expect(page.get_by_role("link", name="Ivan Petrov")).to_have_count(0)
        assert_axe_clean(page)
        page.get_by_role("link", name="Marta Keller").click()
        expect(page.get_by_role("heading", name="Marta Keller", level=1)).to_be_visible(timeout=WAIT)

        # a refused e-mail shows the API's words and keeps the stored one
        page.get_by_label("E-mail").fill("not-an-address")
        page.get_by_role("button", name="Save details").click()
        expect(page.get_by_text("Enter a valid email address.")).to_be_visible(timeout=WAIT)
        page.get_by_label("E-mail").fill("marta@example.com")
        page.get_by_label("Name").fill("Marta K.")
        page.get_by_role("button", name="Save details").click()
        expect(page.get_by_role("heading", name="Marta K.", level=1)).to_be_visible(timeout=WAIT)
        expect(page.get_by_role("status")).to_contain_text("Saved.")

        page.get_by_label("Add tags").fill("gdpr, newsletter")
        page.get_by_role("button", name="Add tags").click()
        tags = page.locator(".data-tags")
        expect(tags).to_contain_text("gdpr", timeout=WAIT)
        expect(tags).to_contain_text("newsletter")
        page.get_by_role("button", name="Remove the tag newsletter").click()
        expect(tags).not_to_contain_text("newsletter", timeout=WAIT)
        assert_axe_clean(page)

        # the list, as the guide shows it
        page.goto(owner_server.url("/console/settings/data/"))
        expect(page.get_by_role("link", name="Marta K.")).to_be_visible(timeout=WAIT)
        IMAGE.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(IMAGE))

        page.get_by_role("link", name="Marta K.").click()
        page.get_by_role("link", name="Erase this contact…").click()
        expect(page.get_by_role("heading", name="Erase Marta K.?", level=1)).to_be_visible(timeout=WAIT)
        expect(page.get_by_text("1 chat, on every channel.")).to_be_visible()
        expect(page.get_by_text("This cannot be undone.")).to_be_visible()
        assert_axe_clean(page)
        page.get_by_role("button", name="Erase for good").click()
        expect(page.get_by_role("status")).to_contain_text("The erasure has started", timeout=WAIT)
        expect(page.get_by_role("link", name="Marta K.")).to_have_count(0)
        expect(page.get_by_role("link", name="Ivan Petrov")).to_be_visible()

        page.get_by_role("link", name="Audit log").click()
        expect(page.get_by_role("heading", name="Audit log", level=1)).to_be_visible(timeout=WAIT)
        page.get_by_label("Who").select_option(label="A person in the console")
        page.get_by_role("button", name="Show").click()
        entry = page.locator(".data-audit tbody tr").filter(has_text="contact.erased")
        expect(entry).to_have_count(1, timeout=WAIT)
        expect(entry).to_contain_text("A person in the console")
        assert_axe_clean(page)
        shot(page, "audit")
    finally:
        context.close()


@pytest.mark.parametrize("path", ["", "retention/", "audit/"])
def test_the_data_pages_are_clean_on_a_phone(browser, owner_server, path, shot):
    context = browser.new_context(viewport={"width": 390, "height": 844}, locale="en-US")
    try:
        page = context.new_page()
        sign_in_owner(page, owner_server)
        page.goto(owner_server.url(f"/console/settings/data/{path}"))
        expect(page.locator("h1")).to_be_visible(timeout=WAIT)
        assert_axe_clean(page)
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 390, width
        if path == "retention/":
            page.get_by_label("For a number of days").check()
            page.get_by_label("Days after a chat's last message").fill("10")
            page.get_by_role("button", name="Save").click()
            expect(page.get_by_text(re.compile("greater than or equal to 30"))).to_be_visible(timeout=WAIT)
            page.get_by_label("Days after a chat's last message").fill("365")
            page.get_by_role("button", name="Save").click()
            expect(page.get_by_role("status")).to_contain_text("Saved.", timeout=WAIT)
            expect(page.locator(".lead")).to_contain_text("365 days")
        shot(page)
    finally:
        context.close()
